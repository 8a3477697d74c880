#!/usr/bin/env python3
"""Fill a pool through libcxlshm, then wait to be killed.

    pool_hog.py LIBCXLSHM heap|table READY_FILE

heap: objects of 1 MiB until the heap is full (CXL_ENOSPC); table: objects
of 64 bytes until the object table is full (CXL_ENOMETA). The pool and the
job come from the environment (CXL_POOL, CXL_JOB, ...). Writes the count
and the last error into READY_FILE, then sleeps: the caller kills it with
SIGKILL, so that its objects stay behind as those of a crashed job.
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
what, ready = sys.argv[2], sys.argv[3]
lib.cxl_errmsg.restype = ctypes.c_char_p
pool = ctypes.c_void_p()
if lib.cxl_pool_attach_env(ctypes.byref(pool)) != 0:
    sys.exit("pool_hog: attach: %s" % lib.cxl_errmsg().decode())
size = 1 << 20 if what == "heap" else 64
obj = ctypes.create_string_buffer(512)  # struct cxl_obj, with room
n = 0
while True:
    rc = lib.cxl_obj_create(pool, ("hog%d" % n).encode(),
                            ctypes.c_uint64(size), 0, obj)
    if rc != 0:
        break
    lib.cxl_obj_close(obj)
    n += 1
with open(ready, "w") as f:
    f.write("%d objects, then: %s\n" % (n, lib.cxl_errmsg().decode()))
time.sleep(600)
