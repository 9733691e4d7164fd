"""Content hashes of profile files: the key of the per-host summary cache, so a rerun
recomputes only the hosts whose bytes changed (a copied or touched file is still a hit)."""

from __future__ import annotations

CHUNK_BYTES = 4 << 20


def content_hash(path: str) -> str:
    """BLAKE2b (128-bit) of the file's bytes, streamed (constant memory)."""
    import hashlib  # here: its import loads OpenSSL (3.6 MB, 3 ms), for runs that hash only

    from stepscope.xspace.io import is_url  # protobuf: not for the CLI's --help

    digest = hashlib.blake2b(digest_size=16)
    if is_url(path):
        import fsspec

        with fsspec.open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                digest.update(chunk)
    else:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_BYTES):
                digest.update(chunk)
    return digest.hexdigest()
