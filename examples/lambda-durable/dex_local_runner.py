"""dex-local-runner (PyPI aws-durable-execution-sdk-python-testing 1.4.0, pinned in .ci/run) with
its lost wake-up fixed. Start the runner through this file, in the Python that has the runner
installed, with the runner's own arguments (docs/adapters.md):

    PYTHON examples/lambda-durable/dex_local_runner.py start-server --host 127.0.0.1 --port 5065 ...

wfc's live tests (wfc-cli/tests/lambda_durable_live.rs, this example's tests) start it so.

The bug: the runner completes a due WAIT (or step retry) in a scheduled wake-up, ``fire_due``,
which completes the operations on the execution's worker lane and then invokes the function.
Every checkpoint and every finished invocation re-arms the wake-up through
``_schedule_earliest_pending``, which cancels the armed one even when it is already running:
cancelled while it waits for the lane, it neither invokes the function nor re-arms, while its
lane task still completes the WAIT. The function's invocation, which returned PENDING for that
WAIT, is then never followed by another one and the execution runs to its timeout. With
``--skip-time`` a WAIT is due at once, so its wake-up runs while the invocation that started it
is still checkpointing or finishing; on a loaded machine the cancel lands in that window now
and then (a Map iteration's or a Map Run child's Wait in lambda_durable_live; deterministic with
a 50-ms delay added to the lane task).

The fix: a wake-up that is past its sleep finishes its work when cancelled (cancelling it was
only meant to replace a pending timer with a fresh one; the extra re-arm and invoke it then
makes are harmless: the invocation gate defers or drops duplicates). A wake-up still sleeping is
cancelled as before. Only for the pinned version: any other leaves the runner as it is.
"""

import asyncio
import os
import sys
import time

from aws_durable_execution_sdk_python_testing import __about__, executor
from aws_durable_execution_sdk_python_testing.cli import main

FIXED_VERSION = "1.4.0"


def _fire_due_and_invoke_handler(self, execution_arn):
    async def fire_due():
        future = self._registry.submit(
            execution_arn,
            executor.CallableTask(lambda: self._fire_due_operations(execution_arn)),
        )
        lane = asyncio.wrap_future(future)
        try:
            completed_any = await asyncio.shield(lane)
        except asyncio.CancelledError:
            if self._closing:
                raise
            # Re-armed while completing: finish, or the completion is never delivered.
            completed_any = await lane
        if completed_any:
            self._invoke_execution(execution_arn)
        self._schedule_earliest_pending(execution_arn)

    return fire_due


def _slowed(fire_due_operations, seconds):
    def slow(self, execution_arn):
        time.sleep(seconds)
        return fire_due_operations(self, execution_arn)

    return slow


if __about__.__version__ == FIXED_VERSION:
    executor.Executor._fire_due_and_invoke_handler = _fire_due_and_invoke_handler
    # A test's proof: the wake-up's lane task made slow (a loaded machine), which without the fix
    # loses the wake-up every time.
    slow_ms = int(os.environ.get("WFC_DEX_SLOW_WAKE_UP_MS", "0"))
    if slow_ms > 0:
        executor.Executor._fire_due_operations = _slowed(executor.Executor._fire_due_operations, slow_ms / 1000)
else:
    print(
        f"dex_local_runner.py: runner {__about__.__version__}, not {FIXED_VERSION}: lost wake-up fix not applied",
        file=sys.stderr,
    )

if __name__ == "__main__":
    sys.argv[0] = "dex-local-runner"
    sys.exit(main())
