"""Ctrl-C held around native steps (common.interrupts), checked in real subprocesses."""
from __future__ import annotations

import subprocess
import sys
import textwrap

# A child of a shell's background job starts with SIGINT ignored (POSIX shells do that
# without job control) and Python then installs no KeyboardInterrupt handler: the script
# puts Python's own default back first, as an interactive `coderag` has it.
PRELUDE = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from common.interrupts import held_interrupt
    done = []
    try:
        with held_interrupt("the step"):
            for _ in range({signals}):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
            done.append("body finished")
    except KeyboardInterrupt:
        print("raised after:", ",".join(done))
        sys.exit(130)
    print("no interrupt")
""")


def _python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh Python with SIGINT as an interactive start has it."""
    return subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, timeout=60)


def _run(signals: int) -> subprocess.CompletedProcess:
    return _python(SCRIPT.format(signals=signals))


def test_one_ctrl_c_waits_for_the_step_then_raises():
    proc = _run(1)
    assert proc.returncode == 130, proc.stderr
    assert proc.stdout.strip() == "raised after: body finished"  # not in the middle of the body
    assert proc.stderr.strip() == "coderag: stopping after the step (Ctrl-C again to stop at once)"


def test_a_second_ctrl_c_stops_at_once_with_one_line():
    proc = _run(2)
    assert proc.returncode == 130
    assert "body finished" not in proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "coderag: interrupted"


def test_the_default_handler_is_back_after_the_step():
    code = ("import signal\nfrom common.interrupts import held_interrupt\n"
            "with held_interrupt('x'):\n    pass\n"
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    proc = _python(code)
    assert proc.stdout.strip() == "True", proc.stderr


def test_a_ctrl_c_inside_a_garbage_collector_callback_is_not_lost():
    code = textwrap.dedent("""
        import os, signal, sys, time, weakref
        from common.interrupts import keep_interrupts_from_cleanup_callbacks
        keep_interrupts_from_cleanup_callbacks()
        class Thing: pass
        def callback(_ref):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the KeyboardInterrupt is raised here, inside the callback
        t = Thing(); ref = weakref.ref(t, callback)
        try:
            del t
            for _ in range(100):
                time.sleep(0.01)
        except KeyboardInterrupt:
            print("interrupted"); sys.exit(130)
        print("finished")
    """)
    proc = _python(code)
    assert proc.stdout.strip() == "interrupted", (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
