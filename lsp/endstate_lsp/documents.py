"""The text the server analyses: open buffers as the client has them, else files on disk."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pygls.lsp.server import LanguageServer

from endstate_lsp.convert import Lines, path_to_uri, uri_to_path

MAX_BYTES = 1 << 20
"""No file larger is read from the disk (a task.json buffer over it is lint's to report)."""

MANIFEST = "task.json"


class Buffer:
    """One version of a document: its bytes and, built on first use, their line index."""

    def __init__(self, source: str, version: int | None, data: bytes) -> None:
        self.source = source
        self.version = version
        self.data = data

    @cached_property
    def lines(self) -> Lines:
        return Lines(self.data)


@dataclass(frozen=True)
class TaskDocument:
    """An open task.json small enough to analyse: where it is, its bytes, its positions."""

    uri: str
    path: Path
    buffer: Buffer

    @property
    def root(self) -> Path:
        """The task folder (the one holding this task.json)."""
        return self.path.parent

    @property
    def data(self) -> bytes:
        return self.buffer.data

    @property
    def lines(self) -> Lines:
        return self.buffer.lines


class Documents:
    """Buffers by URI, each kept while its version (and text) stays the same."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._buffers: dict[str, Buffer] = {}

    def buffer(self, uri: str) -> Buffer | None:
        """The document's current text (an open buffer, else the file read through the
        workspace); None when there is none."""
        try:
            doc = self._server.workspace.get_text_document(uri)
            source = doc.source
            cached = self._buffers.get(uri)
            if cached is not None and cached.source is source and cached.version == doc.version:
                return cached
            buffer = Buffer(source, doc.version, source.encode("utf-8", errors="surrogatepass"))
        except Exception:
            return None
        if doc.version is not None:  # an open document: keep it until its next version
            self._buffers[uri] = buffer
        return buffer

    def data(self, uri: str) -> bytes | None:
        buffer = self.buffer(uri)
        return buffer.data if buffer is not None else None

    def task_document(self, uri: str) -> TaskDocument | None:
        """The task.json at ``uri`` when it can be analysed, else None."""
        path = uri_to_path(uri)
        if path is None or path.name != MANIFEST:
            return None
        buffer = self.buffer(uri)
        if buffer is None or len(buffer.data) > MAX_BYTES:
            return None
        return TaskDocument(uri, path, buffer)

    def file_text(self, path: Path) -> bytes:
        """A file's text: its open buffer, else the file (b"" when missing or over 1 MiB)."""
        data = self.data(path_to_uri(path))
        return data if data is not None else _read(path)

    def file_lines(self, path: Path) -> Lines:
        """The line index of :meth:`file_text`, the buffer's own when the file is open."""
        buffer = self.buffer(path_to_uri(path))
        return buffer.lines if buffer is not None else Lines(_read(path))

    def forget(self, uri: str) -> None:
        """The document was closed."""
        self._buffers.pop(uri, None)


def _read(path: Path) -> bytes:
    try:
        if path.is_file() and path.stat().st_size <= MAX_BYTES:
            return path.read_bytes()
    except OSError:
        pass
    return b""
