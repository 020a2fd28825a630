// Internal checks: the public ones (trtutils/check.h: throw_error, TRT_CHECK, TRT_CHECK_ARG,
// TRT_THROW, check_thread_count) plus TRT_INTERNAL_CHECK for the library's own invariants.
#pragma once

#include "trtutils/check.h"

#define TRT_INTERNAL_CHECK(cond)                                                                 \
  TRT_CHECK(cond, ::trtutils::ErrorCode::kInternal, "internal error: {} failed at {}:{}", #cond, \
            __FILE__, __LINE__)
