"""Installs a seccomp filter that fails the given syscalls, then execs a program: simulates
kernels without a feature (no Landlock, no user namespaces) for the end-to-end suite.

argv: N, then N pairs (syscall number, errno), then the program and its argv (argv[0] as given).
"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
n = int(sys.argv[1])
rules = [(int(sys.argv[2 + 2 * i]), int(sys.argv[3 + 2 * i])) for i in range(n)]
program, argv = sys.argv[2 + 2 * n], sys.argv[3 + 2 * n:]
class F(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class P(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(F))]
insns = [(0x20, 0, 0, 0)]
for nr, err in rules:
    insns += [(0x15, 0, 1, nr), (0x06, 0, 0, 0x00050000 | err)]
insns.append((0x06, 0, 0, 0x7fff0000))
arr = (F * len(insns))(*[F(*i) for i in insns])
prog = P(len(insns), arr)
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0, ctypes.get_errno()
os.execv(program, argv)
