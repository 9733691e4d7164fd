"""glibc's ``mallinfo2`` for a test's child process: the opening of a script that measures
where malloc put its blocks (``arena``: the main heap; ``hblkhd``: blocks mapped on their own)."""

MALLINFO2 = r"""
import ctypes

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
"""
