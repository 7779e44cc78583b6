"""What a person reads after ``eval``: the console summary, report.html, and run comparisons."""
