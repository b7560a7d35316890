/* SPDX-License-Identifier: MIT */
/* Every engine header at once, while the files move to the ones they use. */
#ifndef NP_INTERNAL_H
#define NP_INTERNAL_H

#include "core/batch.h"
#include "core/codemem.h"
#include "core/engine.h"
#include "core/modules.h"
#include "core/reclaim.h"
#include "core/shadow.h"
#include "core/sigchain.h"
#include "core/site.h"
#include "core/thread.h"
#include "core/trap.h"
#include "host/host.h"
#include "host/layout.h"
#endif
