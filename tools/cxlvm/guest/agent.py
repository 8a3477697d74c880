# cxlvm guest, stage 2: the guest's PID 1 (python3 -S). Reaps orphans and
# runs the command server in a child; tools/cxlvm/cxlvm talks to it.
import json, os, signal, socket, socketserver, struct, subprocess, sys
import threading, time

def conf():
    out = {}
    for line in open("/run/cxlvm/guest.conf"):
        k, _, v = line.strip().partition("=")
        if k:
            out[k] = v.strip("'\"")
    return out


C = conf()
PORT = int(C["CXLVM_AGENT_PORT"])
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root", "USER": "root", "LOGNAME": "root", "SHELL": "/bin/sh",
    "LANG": "C.UTF-8", "TERM": "dumb",
    "CXLVM_GUEST": C["CXLVM_GUEST"], "CXLVM_GUESTS": C["CXLVM_GUESTS"],
}


def send(sock, lock, kind, data=b""):
    with lock:
        sock.sendall(kind + struct.pack(">I", len(data)) + data)


def recv_exact(f, n):
    b = f.read(n)
    if len(b) != n:
        raise EOFError
    return b


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        sock, lock = self.request, threading.Lock()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        req = json.loads(self.rfile.readline())
        if req.get("op") == "ping":
            send(sock, lock, b"x", b"0")
            return
        env = dict(BASE_ENV)
        env.update(req.get("env") or {})
        cwd = req.get("cwd") or "/"
        if not os.path.isdir(cwd):
            cwd = "/"
        argv = req["argv"] if "argv" in req else ["/bin/sh", "-c", req["sh"]]
        try:
            p = subprocess.Popen(
                argv, cwd=cwd, env=env, start_new_session=True,
                stdin=subprocess.PIPE if req.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            send(sock, lock, b"r", f"cxlvm-agent: {argv[0]}: {e.strerror}\n".encode())
            send(sock, lock, b"x", b"127")
            return

        def pump(src, kind):
            try:
                while True:
                    b = os.read(src.fileno(), 65536)
                    if not b:
                        break
                    send(sock, lock, kind, b)
            except OSError:
                pass
        pumps = [threading.Thread(target=pump, args=(p.stdout, b"o")),
                 threading.Thread(target=pump, args=(p.stderr, b"r"))]
        for t in pumps:
            t.start()

        def killpg(sig):
            try:
                os.killpg(p.pid, sig)
            except OSError:
                pass

        def reader():
            # frames from the client: i=stdin data, e=stdin EOF, k=signal
            try:
                while True:
                    kind = recv_exact(self.rfile, 1)
                    n, = struct.unpack(">I", recv_exact(self.rfile, 4))
                    data = recv_exact(self.rfile, n)
                    if kind == b"i" and p.stdin:
                        try:
                            p.stdin.write(data)
                            p.stdin.flush()
                        except OSError:
                            pass
                    elif kind == b"e" and p.stdin:
                        try:
                            p.stdin.close()
                        except OSError:
                            pass
                    elif kind == b"k":
                        killpg(int(data))
            except (EOFError, OSError, ValueError):
                # the client is gone: so is the command
                if p.poll() is None:
                    killpg(signal.SIGKILL)
        threading.Thread(target=reader, daemon=True).start()
        rc = p.wait()
        for t in pumps:
            t.join()
        if rc < 0:
            rc = 128 - rc
        try:
            send(sock, lock, b"x", str(rc).encode())
        except OSError:
            pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve():
    with Server(("0.0.0.0", PORT), Handler) as s:
        try:
            up = open("/proc/uptime").read().split()[0]
            with open("/dev/console", "w") as con:
                con.write(f"cxlvm-agent {up}: listening on port {PORT}\n")
        except OSError:
            pass
        s.serve_forever()


def main():
    if os.getpid() != 1:
        serve()
        return
    # PID 1: keep a server child alive and reap every orphan
    os.environ.update(BASE_ENV)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        child = os.fork()
        if child == 0:
            os.setsid()
            try:
                serve()
            finally:
                os._exit(1)
        while True:
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                break
            if pid == child:
                break
        time.sleep(0.5)


main()
