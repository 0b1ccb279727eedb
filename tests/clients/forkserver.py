"""The venv's Python with the MCP SDK imported once, for the test suite.

  forkserver.py DIR

Importing `mcp` costs a Python process over a second of CPU (pydantic
builds the protocol's models), and the suite starts scores of SDK clients.
This server imports the SDK once, then forks a child for every script a
launcher asks it to run: the child takes the launcher's stdin, stdout,
stderr, arguments, environment and working directory, and runs the script
as `python SCRIPT ARGS...` would.

It writes DIR/python, the launcher (run by the system's python3, which
imports nothing heavy), listens on DIR/socket, and prints `ready`. The
launcher passes its standard descriptors over the socket, forwards the
signals it receives to the child and exits as the child did: by the same
signal, or with the same status. When a launcher dies, its child is
killed; when this server's stdin closes (the test binary is gone), every
child is killed and DIR removed.

A launcher runs the venv's Python itself (exec) for anything else: an
option before the script, or a PYTHON* variable in its environment.
"""
import atexit
import gc
import os
import runpy
import selectors
import shutil
import signal
import socket
import struct
import sys
import threading
import traceback

# What the suite's SDK clients import. The rest of a script's imports are
# cheap, or are made in the child.
import anyio  # noqa: F401
import mcp  # noqa: F401
import mcp.client.stdio  # noqa: F401
import mcp.client.streamable_http  # noqa: F401
import mcp.shared.exceptions  # noqa: F401
import mcp_types  # noqa: F401

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forklaunch.py")


def main():
    directory = sys.argv[1]
    path = os.path.join(directory, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    write_launcher(directory, path)
    # Objects made so far live as long as every child: the collector need
    # not walk them, and a child touches fewer of the pages it shares.
    gc.collect()
    gc.freeze()

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, ("accept", None))
    selector.register(0, selectors.EVENT_READ, ("parent", None))
    children = {}  # pid -> the launcher's connection, None once it is gone
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            what, data = key.data
            if what == "parent":
                # The test binary exited (or closed our stdin): nothing can
                # ask for a child's status any more.
                for pid in children:
                    kill(pid, signal.SIGKILL)
                shutil.rmtree(directory, ignore_errors=True)
                return
            if what == "accept":
                connection, _ = listener.accept()
                pid = spawn(connection)
                if pid is None:
                    connection.close()
                    continue
                children[pid] = connection
                selector.register(connection, selectors.EVENT_READ, ("launcher", pid))
                selector.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exit", pid))
            elif what == "launcher":
                pid = data
                connection = children[pid]
                try:
                    message = connection.recv(64)
                except OSError:
                    message = b""
                if message:
                    # One signal number per byte, as the launcher got them.
                    for number in message:
                        kill(pid, number)
                else:
                    # The launcher is gone (killed): so is its child.
                    kill(pid, signal.SIGKILL)
                    selector.unregister(connection)
                    connection.close()
                    children[pid] = None
            elif what == "exit":
                pid = data
                pidfd = key.fd
                selector.unregister(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                connection = children.pop(pid)
                if connection is not None:
                    selector.unregister(connection)
                    if os.WIFSIGNALED(status):
                        reply = b"s%d\n" % os.WTERMSIG(status)
                    else:
                        reply = b"x%d\n" % os.waitstatus_to_exitcode(status)
                    try:
                        connection.sendall(reply)
                    except OSError:
                        pass
                    connection.close()


def write_launcher(directory, path):
    python3 = shutil.which("python3")
    with open(LAUNCHER) as source:
        body = source.read()
    launcher = os.path.join(directory, "python")
    with open(launcher, "w") as out:
        out.write(f"#!{python3} -IS\n")
        out.write(f"SOCKET = {path!r}\nPYTHON = {sys.executable!r}\n")
        out.write(body)
    os.chmod(launcher, 0o755)


def kill(pid, number):
    try:
        os.kill(pid, number)
    except (ProcessLookupError, ValueError):
        pass


def spawn(connection):
    """Reads a launcher's request and forks its child; the child's pid."""
    connection.settimeout(10)
    try:
        head, fds, _, _ = socket.recv_fds(connection, 4, 3)
        if len(head) < 4:
            close_all(fds)
            return None
        (size,) = struct.unpack("!I", head)
        body = b""
        while len(body) < size:
            chunk = connection.recv(size - len(body))
            if not chunk:
                close_all(fds)
                return None
            body += chunk
    except OSError:
        return None
    connection.settimeout(None)
    if len(fds) != 3:
        close_all(fds)
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os._exit(child(fds, body))
    close_all(fds)
    return pid


def close_all(fds):
    for fd in fds:
        os.close(fd)


def child(fds, body):
    """Becomes the launcher's process: returns the exit status."""
    try:
        for number, fd in enumerate(fds):
            os.dup2(fd, number)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        fields = body.decode("utf-8", "surrogateescape").split("\0")
        cwd, count = fields[0], int(fields[1])
        argv = fields[2 : 2 + count]
        environment = fields[2 + count :]
        os.chdir(cwd)
        os.environ.clear()
        for entry in environment:
            name, _, value = entry.partition("=")
            os.environ[name] = value
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    except BaseException:
        traceback.print_exc()
        return 70
    return run(argv[0])


def run(script):
    """Runs SCRIPT as the main module; the status python would exit with."""
    try:
        runpy.run_path(script, run_name="__main__")
        status = 0
    except SystemExit as exit:
        status = exit_status(exit.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        finish()
        # Python ends an uncaught Ctrl-C by the signal itself.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 130
    except BaseException:
        traceback.print_exc()
        status = 1
    return finish(status)


def exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def finish(status=0):
    """What the interpreter does on its way out, then the status."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        # As python: a failed flush at exit is status 120.
        status = 120
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return status


if __name__ == "__main__":
    main()
