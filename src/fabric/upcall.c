/* SPDX-License-Identifier: BSD-3-Clause */
/* The upcall table (cxlfi.h): filled once by ep.c, read by the layers
 * below the protocol's top. Defined here, below all of them, so that no
 * lower file refers to an upper one. */
#include "cxlfi.h"

struct cxlfi_upcalls cxlfi_up;
