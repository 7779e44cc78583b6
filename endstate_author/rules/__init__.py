"""The static rules, one module per family (ES0–ES5) plus the documented prove codes (ES9)."""
