/*
 * testdev.h — the test device: a backend for device type TM_DEVICE_TEST,
 * built into the tests only (never into the library), that behaves like an
 * accelerator so front ends that would break on CUDA or Metal break here
 * first, on any machine.
 *
 *   - Its memory is not host memory.  A handle is an address in a region
 *     mapped PROT_NONE, so a front end that dereferences device memory
 *     faults at once (under the test runner and ASan alike).  The bytes
 *     live in a second, readable mapping at the same offset, which only
 *     the device's own work touches.  A handle from anywhere else (a CPU
 *     tensor passed to a device entry) is reported as an error.
 *   - Its stream is asynchronous: every entry queues a job and returns;
 *     one worker thread per device runs the jobs in order by calling the
 *     CPU backend's entries on the readable mapping.  Errors are sticky
 *     (tm_ctx_fail) until the next synchronization, and work queued after
 *     an error is skipped, as on a GPU.
 *   - test:0 runs every entry on every dtype the CPU runs, so its results
 *     must equal the CPU's bit for bit.  test:1 declines every dtype but
 *     F32 and I64 in `supports` (except copy and fill), so the front
 *     ends' dtype fallback runs on it.
 */
#ifndef FOUNDRY_TESTDEV_H
#define FOUNDRY_TESTDEV_H

#include "foundry.h"

/* Registers the test device's backend (idempotent).  0 on success, else
 * the tm_status (tm_last_error() says why). */
int tt_testdev_register(void);

#define TT_TEST0 TM_DEVICE(TM_DEVICE_TEST, 0)
#define TT_TEST1 TM_DEVICE(TM_DEVICE_TEST, 1)

/* Fault injection: after `after` more successful backend allocations on
 * any test device, the next `count` fail (count 0 disables). */
void tt_testdev_fail_allocs(int after, int count);
/* While held, a device's worker runs nothing, so work piles up in its
 * queue (release before synchronizing, or the host waits forever). */
void tt_testdev_hold(tm_device dev, int hold);
/* Jobs queued on `dev` so far (entries, copies, frees). */
long tt_testdev_jobs(tm_device dev);
/* True when a and b (on any devices) have the same dtype, element count
 * and bytes, compared on the host (NaNs by bit pattern). */
bool tt_same_bits(const tm_tensor *a, const tm_tensor *b);
/* Bytes the test devices hold from their address space right now. */
size_t tt_testdev_bytes_in_use(void);

#endif
