# The launcher forkserver.py writes (after a line naming SOCKET and
# PYTHON, the venv's interpreter): `python SCRIPT ARGS...` for the suite,
# run by a child of the fork server that already imported the MCP SDK.
# This process passes its stdin, stdout and stderr to that child, forwards
# the signals it gets, and exits as the child did. Anything but a script
# (an option first) and any PYTHON* variable run the venv's Python itself.
import os
import signal
import socket
import struct
import sys


def real_python():
    os.execv(PYTHON, [PYTHON] + sys.argv[1:])  # noqa: F821


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-") or any(n.startswith("PYTHON") for n in os.environ):
        real_python()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(SOCKET)  # noqa: F821
    except OSError:
        real_python()
    fields = [os.getcwd(), str(len(args))] + args
    fields += [f"{name}={value}" for name, value in os.environ.items()]
    body = "\0".join(fields).encode("utf-8", "surrogateescape")
    socket.send_fds(connection, [struct.pack("!I", len(body))], [0, 1, 2])
    connection.sendall(body)
    # The child holds the pipes now: keep no reader or writer of them here
    # but stderr, for this launcher's own message.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)

    def forward(number, _frame):
        try:
            connection.send(bytes([number]))
        except OSError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
                   signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, forward)
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = connection.recv(16)
        if not chunk:
            print("python: the fork server went away before the script ended", file=sys.stderr)
            sys.exit(70)
        reply += chunk
    kind, value = reply[:1], int(reply[1:])
    if kind == b"s":
        try:
            signal.signal(value, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP keep their action anyway
        os.kill(os.getpid(), value)
    sys.exit(value)


main()
