/* SPDX-License-Identifier: BSD-3-Clause */
/* libcxlshm: CXL shared-memory pools, arena, coherence, rings and sync. */
#ifndef CXLSHM_CXLSHM_H
#define CXLSHM_CXLSHM_H

#include "arena.h"
#include "clock.h"
#include "coherence.h"
#include "error.h"
#include "liveness.h"
#include "pool.h"
#include "ring.h"
#include "sync.h"

#endif
