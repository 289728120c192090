"""Local network servers for the tests that mount archives by URL (http://, https://, s3://).

Every server listens on 127.0.0.1 only, on a port chosen at run time, is started by the test
as a context manager and always stopped on the way out; nothing leaves the machine.

- Nginx(root_dir, tmp_dir, tls=False, ranges=True): Debian's nginx serving root_dir as static
  files the way a real web server does (sendfile, keep-alive, ETags, HTTP/2 over TLS with
  tls=True), with an access log of every request (method, URI, status, Range, bytes sent,
  protocol, connection serial, ...) that requests() parses.  ranges=False makes an nginx
  that ignores Range (max_ranges 0), for the client's refusal of a server without ranges.
  make_tls_cert() makes the throwaway CA and server certificate it uses.
- FaultProxy(upstream_host, upstream_port): a transparent HTTP/1.1 reverse proxy in a thread
  that injects faults on demand: a delay before each request, error statuses (503 and
  friends, with Retry-After), connections dropped or reset in the middle of a body, bodies
  that stall; and logs what it forwarded.
- SigV4Server(root_dir, access_key, secret_key, ...): a small S3 look-alike (path-style GET
  and HEAD of root_dir/BUCKET/KEY, single ranges, ETag, Last-Modified, If-Match and
  friends) that verifies the AWS Signature Version 4 of every request and answers the way S3
  does when it is wrong (403 SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied, ...).
  The signing code, sigv4_signature() and friends, follows AWS's published algorithm; it
  also signs the requests of the clients here (sign_request(), s3_request()).
- S3rver(tmp_dir): the s3rver npm package (a fuller S3 emulation that does NOT check V4
  signatures), for tests that want a real third-party S3 implementation; create_bucket()
  and put_object() upload through its S3 API.  require_s3rver() skips a test without it.

Helpers: free_port(), wait_port(), nginx_path()/require_nginx(), s3rver_path()/require_s3rver().
"""
import collections
import datetime
import email.utils
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape as xml_escape

HOST = "127.0.0.1"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
S3RVER_DEFAULT = "/opt/s3rver/node_modules/.bin/s3rver"
NGINX_DEFAULT = "/usr/sbin/nginx"
# the only credentials s3rver 3.7.1 knows: any other access key is InvalidAccessKeyId
S3RVER_ACCESS_KEY = "S3RVER"
S3RVER_SECRET_KEY = "S3RVER"


# ---- ports and processes ---------------------------------------------------------------------

def free_port():
    """A TCP port on 127.0.0.1 that nobody listened on a moment ago (for servers that cannot
    bind port 0 and tell which port they got)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_port(port, timeout=60, proc=None, host=HOST):
    """Polls until something accepts connections on host:port.  Returns False if proc (a
    Popen) exited first, raises RuntimeError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=2):
                return True
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")


def _stop_process(proc, sig=signal.SIGTERM, timeout=30):
    """Stops a process this module started (in a session of its own, so that its children,
    nginx's workers, go with it if it has to be killed)."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.wait()
    else:
        # stray children (workers whose master was killed) of our process group
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# ---- nginx -----------------------------------------------------------------------------------

def nginx_path():
    """nginx's executable ($TARSEEK_NGINX, else on PATH, else /usr/sbin/nginx), or None."""
    p = os.environ.get("TARSEEK_NGINX") or shutil.which("nginx") or NGINX_DEFAULT
    return p if os.path.isfile(p) and os.access(p, os.X_OK) else None


def require_nginx(tls=False):
    """Skips the calling test unless nginx (and, for tls=True, openssl) is installed."""
    import pytest
    if nginx_path() is None:
        pytest.skip("nginx is not installed")
    if tls and shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")


def make_tls_cert(out_dir, names=("127.0.0.1", "localhost")):
    """Makes a throwaway CA and a server certificate signed by it (openssl CLI, P-256 keys,
    valid two days, subjectAltName IP:/DNS: for each of names).  Returns (ca_file, cert_file,
    key_file)."""
    os.makedirs(out_dir, exist_ok=True)
    p = lambda name: os.path.join(out_dir, name)  # noqa: E731

    def openssl(*args):
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)} failed:\n{r.stderr}")

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
            "-subj", "/CN=tarseek throwaway test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-new", *ec, "-keyout", p("server.key"), "-out", p("server.csr"),
            "-subj", f"/CN={names[0]}")
    san = ",".join(("IP:" if re.fullmatch(r"[0-9.]+|[0-9a-fA-F:]*:[0-9a-fA-F:]*", n)
                    else "DNS:") + n for n in names)
    with open(p("server.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
            "-CAcreateserial", "-out", p("server.pem"), "-days", "2", "-extfile", p("server.ext"))
    return p("ca.pem"), p("server.pem"), p("server.key")


# the access log: one line per request, fields separated by tabs (nginx escapes tabs, quotes,
# backslashes and other control bytes in variables as \xHH, and logs an empty one as "-")
_LOG_FIELDS = [
    ("method", "$request_method", str),
    ("uri", "$request_uri", str),
    ("status", "$status", int),
    ("range", "$http_range", str),
    ("bytes_sent", "$body_bytes_sent", int),
    ("protocol", "$server_protocol", str),
    ("connection", "$connection", int),
    ("connection_requests", "$connection_requests", int),
    ("if_match", "$http_if_match", str),
    ("content_range", "$sent_http_content_range", str),
    ("msec", "$msec", float),
]


def _nginx_unescape(value):
    return re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


class Nginx:
    """nginx serving root_dir on 127.0.0.1:PORT (context manager).

    Static files with sendfile, keep-alive (1000s of requests per connection), ETags and
    If-Match/If-None-Match/If-Range as nginx always does them, Range with one or more ranges
    (ranges=False: max_ranges 0, so a Range request gets 200 and the whole file).  tls=True:
    HTTPS and HTTP/2 (listen ssl http2) with a certificate for 127.0.0.1 and localhost signed
    by a throwaway CA, whose certificate is .ca_file.  Config, logs, pid and temp files live
    in tmp_dir/nginx-N.

    Attributes: .port, .url ("http://127.0.0.1:PORT" or "https://..."), .ca_file (None
    without TLS), .access_log, .error_log.  requests() parses the access log into dicts with
    the keys of _LOG_FIELDS (method, uri, status, range, bytes_sent, protocol, connection,
    connection_requests, if_match, content_range, msec; None for a field nginx logged as
    "-"); clear_log() makes requests() forget what was logged so far.
    extra_config: more directives for the server block (e.g. "limit_rate 1m;")."""

    _counter = 0

    def __init__(self, root_dir, tmp_dir, tls=False, ranges=True, extra_config=""):
        Nginx._counter += 1
        self.root_dir = os.path.abspath(root_dir)
        self.dir = os.path.join(os.path.abspath(tmp_dir), f"nginx-{Nginx._counter}")
        self.tls = tls
        self.ranges = ranges
        self.extra_config = extra_config
        self.port = None
        self.url = None
        self.ca_file = None
        self.proc = None
        self.access_log = os.path.join(self.dir, "access.log")
        self.error_log = os.path.join(self.dir, "error.log")
        self._offset = 0

    def _config(self, port, cert, key):
        d = self.dir
        fmt = "\t".join(var for _, var, _ in _LOG_FIELDS)
        listen = f"listen {HOST}:{port}" + (" ssl http2" if self.tls else "") + ";"
        tls = ""
        if self.tls:
            tls = (f"ssl_certificate {cert};\n    ssl_certificate_key {key};\n"
                   "    ssl_protocols TLSv1.2 TLSv1.3;\n")
        return f"""# written by tests/mount/netservers.py
{"user root;" if os.geteuid() == 0 else ""}
worker_processes 1;
pid {d}/nginx.pid;
error_log {self.error_log} info;
events {{ worker_connections 512; }}
http {{
    types {{ }}
    default_type application/octet-stream;
    log_format tarseek '{fmt}';
    access_log {self.access_log} tarseek;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 120s;
    keepalive_requests 100000;
    server_tokens off;
    etag on;
    server {{
        {listen}
        server_name localhost;
        root {self.root_dir};
        {tls}
        {"" if self.ranges else "max_ranges 0;"}
        {self.extra_config}
    }}
}}
"""

    def __enter__(self):
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        cert = key = None
        if self.tls:
            self.ca_file, cert, key = make_tls_cert(os.path.join(self.dir, "tls"))
        conf = os.path.join(self.dir, "nginx.conf")
        for attempt in range(5):
            port = free_port()
            with open(conf, "w") as f:
                f.write(self._config(port, cert, key))
            with open(self.error_log, "w"):
                pass
            with open(os.path.join(self.dir, "stderr.log"), "wb") as err:
                self.proc = subprocess.Popen(
                    [nginx_path() or "nginx", "-c", conf, "-p", self.dir + "/",
                     "-g", "daemon off;"],
                    stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                    start_new_session=True)
            try:
                ready = wait_port(port, timeout=60, proc=self.proc)
            except RuntimeError:
                _stop_process(self.proc)
                raise
            if ready:
                self.port = port
                scheme = "https" if self.tls else "http"
                self.url = f"{scheme}://{HOST}:{port}"
                return self
            out = _read(os.path.join(self.dir, "stderr.log")) + _read(self.error_log)
            _stop_process(self.proc)
            if "Address already in use" not in out:
                raise RuntimeError(f"nginx exited with {self.proc.returncode}:\n{out}")
        raise RuntimeError("nginx found no free port")

    def __exit__(self, *exc):
        if self.proc is not None:
            _stop_process(self.proc, signal.SIGTERM)   # fast shutdown: no lingering
            self.proc = None

    def requests(self, at_least=0, timeout=10):
        """The requests logged since the last clear_log(), as dicts.  nginx writes a line
        when it has sent a response, which a client can see a moment before: at_least=N polls
        (up to timeout seconds) until there are N."""
        deadline = time.monotonic() + timeout
        while True:
            records = self._parse()
            if len(records) >= at_least or time.monotonic() >= deadline:
                return records
            time.sleep(0.02)

    def _parse(self):
        with open(self.access_log, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        records = []
        for line in data.decode("utf-8", "replace").split("\n"):
            if not line:
                continue
            values = line.split("\t")
            rec = {}
            for (name, _, kind), value in zip(_LOG_FIELDS, values):
                rec[name] = None if value == "-" else kind(_nginx_unescape(value))
            records.append(rec)
        return records

    def clear_log(self):
        """Forgets the requests logged so far (the log file itself is left alone)."""
        self._offset = os.path.getsize(self.access_log)

    def log_text(self):
        """The error log (for assertion messages)."""
        return _read(self.error_log)


# ---- threaded HTTP servers in this process ---------------------------------------------------

class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer on 127.0.0.1:0 that knows its open connections, so that stopping
    it also ends idle keep-alive connections, and that keeps quiet about clients that went
    away."""
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, handler, owner):
        self.owner = owner
        self._conns = set()
        self._conns_lock = threading.Lock()
        super().__init__((HOST, 0), handler)

    def process_request(self, request, client_address):
        with self._conns_lock:
            self._conns.add(request)
        self.owner._connection_opened()
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (OSError, http.client.HTTPException)):
            return
        super().handle_error(request, client_address)

    def close_connections(self, timeout=10):
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._conns_lock:
                if not self._conns:
                    return
            time.sleep(0.01)


class _ThreadedService:
    """Runs a _Server in a thread between __enter__ and __exit__."""

    handler = None

    def __init__(self):
        self._stop = threading.Event()
        self._server = None
        self._thread = None
        self.port = None
        self.url = None
        self.connections = 0     # client connections accepted
        self._lock = threading.Lock()

    def _connection_opened(self):
        with self._lock:
            self.connections += 1

    def __enter__(self):
        self._server = _Server(self.handler, self)
        self.port = self._server.server_address[1]
        self.url = f"http://{HOST}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name=type(self).__name__)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._thread.join(timeout=30)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 300            # an idle keep-alive connection is closed after this long

    def log_message(self, format, *args):
        pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""


# ---- the fault-injecting proxy ---------------------------------------------------------------

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
               "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding",
               "upgrade"}

_Fault = collections.namedtuple("_Fault", "kind method status retry_after after_bytes "
                                          "seconds reset resume")


class _ProxyHandler(_Handler):
    upstream = None

    def do_GET(self):
        self.server.owner._handle(self)

    do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_GET

    def finish(self):
        if self.upstream is not None:
            self.upstream.close()
        super().finish()


class FaultProxy(_ThreadedService):
    """A transparent HTTP/1.1 reverse proxy on 127.0.0.1:PORT to upstream_host:upstream_port
    that injects faults on demand (context manager).

    Clients may keep connections alive; each client connection gets an upstream keep-alive
    connection of its own.  Requests (any method) go upstream unchanged, Host header
    included (so SigV4 signatures stay valid), apart from the hop-by-hop headers; responses
    come back unchanged (status, reason, headers with ETag/Content-Range/..., body).

    Faults, each for the next n requests (of one method only when method= is given), queued
    in the order they were asked for; all of it thread-safe:
    - delay_ms (attribute): waits that long before handling each request;
    - fail_next(n, status=503, retry_after=None): answers without asking upstream: that
      status, a short text body, Retry-After when retry_after is not None; keeps the
      connection alive;
    - drop_next(n, after_bytes=1000, reset=False): forwards, sends the headers and the first
      after_bytes bytes of the body, then closes the connection (FIN; reset=True: RST);
    - stall_next(n, seconds, after_bytes=0, resume=False): sends the headers and after_bytes
      of body, sends nothing for seconds, then closes the connection (resume=True: sends the
      rest instead).
    reset() forgets queued faults, the delay and the counters.

    Counters: .requests (requests forwarded or answered), .connections (client connections
    accepted), .log: [(method, path, range, status, bytes_sent)] in order of completion,
    range None without a Range header, bytes_sent the body bytes sent to the client (reading
    .log waits up to 5 s for requests still being answered)."""

    handler = _ProxyHandler

    def __init__(self, upstream_host, upstream_port, timeout=120):
        super().__init__()
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.upstream_timeout = timeout
        self.delay_ms = 0
        self.requests = 0
        self._log = []
        self._faults = collections.deque()
        self._inflight = 0
        self._idle = threading.Condition(self._lock)

    # -- control ------------------------------------------------------------------------------

    def _queue(self, n, fault):
        with self._lock:
            self._faults.extend([fault] * n)

    def fail_next(self, n=1, status=503, retry_after=None, method=None):
        self._queue(n, _Fault("fail", method, status, retry_after, 0, 0, False, False))

    def drop_next(self, n=1, after_bytes=1000, reset=False, method=None):
        self._queue(n, _Fault("drop", method, 0, None, after_bytes, 0, reset, False))

    def stall_next(self, n=1, seconds=5, after_bytes=0, resume=False, method=None):
        self._queue(n, _Fault("stall", method, 0, None, after_bytes, seconds, False, resume))

    def reset(self):
        with self._lock:
            self._faults.clear()
            self._log.clear()
            self.requests = 0
            self.connections = 0
            self.delay_ms = 0

    @property
    def log(self):
        with self._idle:
            self._idle.wait_for(lambda: self._inflight == 0, timeout=5)
            return list(self._log)

    def _take(self, method):
        with self._lock:
            self.requests += 1
            self._inflight += 1
            for i, f in enumerate(self._faults):
                if f.method is None or f.method == method:
                    del self._faults[i]
                    return f
        return None

    # -- one request ----------------------------------------------------------------------------

    def _handle(self, h):
        fault = self._take(h.command)
        rng = h.headers.get("Range")
        status, sent = 0, 0
        try:
            body = h.read_body()
            if self.delay_ms:
                self._stop.wait(self.delay_ms / 1000)
            if fault is not None and fault.kind == "fail":
                status = fault.status
                text = f"FaultProxy: injected {fault.status}\n".encode()
                h.send_response_only(status)
                h.send_header("Content-Type", "text/plain")
                h.send_header("Content-Length", str(len(text)))
                if fault.retry_after is not None:
                    h.send_header("Retry-After", str(fault.retry_after))
                h.end_headers()
                if h.command != "HEAD":
                    h.wfile.write(text)
                    sent = len(text)
                return
            resp = self._forward(h, body)
            if resp is None:
                status = 502
                text = b"FaultProxy: upstream failed\n"
                h.send_response_only(502)
                h.send_header("Content-Length", str(len(text)))
                h.end_headers()
                h.wfile.write(text)
                sent = len(text)
                return
            status = resp.status
            sent = self._relay(h, resp, fault)
        finally:
            with self._idle:
                self._log.append((h.command, h.path, rng, status, sent))
                self._inflight -= 1
                self._idle.notify_all()

    def _forward(self, h, body):
        for attempt in (1, 2):
            if h.upstream is None:
                h.upstream = http.client.HTTPConnection(self.upstream_host, self.upstream_port,
                                                        timeout=self.upstream_timeout)
            up = h.upstream
            try:
                up.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
                for k, v in h.headers.items():
                    if k.lower() not in _HOP_BY_HOP:
                        up.putheader(k, v)
                up.endheaders(body or None)
                return up.getresponse()
            except (OSError, http.client.HTTPException):
                # a kept-alive upstream connection the server had closed: once more, afresh
                up.close()
                h.upstream = None
                if attempt == 2:
                    return None
        return None

    def _relay(self, h, resp, fault):
        """Sends resp to the client, applying a drop or stall fault; returns body bytes sent."""
        h.send_response_only(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP_BY_HOP:
                h.send_header(k, v)
        has_body = (h.command != "HEAD" and resp.status not in (204, 304)
                    and resp.status >= 200)
        chunked = has_body and resp.getheader("Content-Length") is None
        if chunked:
            h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        limit = None
        if fault is not None and fault.kind in ("drop", "stall"):
            limit = fault.after_bytes
        sent = self._copy(h, resp, has_body, chunked, limit)
        if fault is None:
            pass
        elif fault.kind == "stall":
            self._stop.wait(fault.seconds)
            if fault.resume and not self._stop.is_set():
                return sent + self._copy(h, resp, has_body, chunked, None)
            self._abort(h, False)
        elif fault.kind == "drop":
            self._abort(h, fault.reset)
        if resp.will_close or (fault is not None and fault.kind in ("drop", "stall")):
            h.upstream.close()
            h.upstream = None
        return sent

    @staticmethod
    def _copy(h, resp, has_body, chunked, limit):
        sent = 0
        while has_body:
            want = 1 << 16 if limit is None else min(1 << 16, limit - sent)
            if want <= 0:
                return sent
            data = resp.read(want)
            if not data:
                break
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            sent += len(data)
        if chunked:
            h.wfile.write(b"0\r\n\r\n")
        return sent

    @staticmethod
    def _abort(h, reset):
        h.close_connection = True
        try:
            if reset:
                # linger 0 and a real close (rfile holds a reference): RST, no FIN
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                h.rfile.close()
                h.connection.close()
            else:
                h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# ---- AWS Signature Version 4 -----------------------------------------------------------------

def _uri_encode(text, slash=True):
    """AWS's UriEncode: every byte but A-Za-z0-9-_.~ as %XX (upper case); '/' too unless
    slash=False."""
    return urllib.parse.quote(text, safe="" if slash else "/")


def sigv4_canonical_uri(raw_path, service="s3"):
    """The canonical URI of a path as sent on the wire (percent-encoded): each segment decoded
    and encoded again with UriEncode, once for S3 and twice for the other services (which AWS
    also normalizes; not done here)."""
    if not raw_path:
        return "/"
    segs = [_uri_encode(urllib.parse.unquote(s)) for s in raw_path.split("/")]
    if service != "s3":
        segs = [_uri_encode(s) for s in segs]
    return "/".join(segs)


def sigv4_canonical_query(raw_query):
    """The canonical query string: name=value pairs decoded, UriEncoded, sorted."""
    pairs = []
    for part in raw_query.split("&") if raw_query else []:
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((_uri_encode(urllib.parse.unquote(name)),
                      _uri_encode(urllib.parse.unquote(value))))
    return "&".join(f"{n}={v}" for n, v in sorted(pairs))


def _header_values(headers):
    """{lowercase name: [values]} from a mapping, an HTTPMessage or a list of pairs."""
    items = headers.items() if hasattr(headers, "items") else headers
    out = {}
    for k, v in items:
        out.setdefault(k.lower().strip(), []).append(str(v))
    return out


def sigv4_canonical_request(method, raw_path, raw_query, headers, signed_headers,
                            payload_hash, service="s3"):
    """The canonical request of AWS SigV4.  headers: all headers (mapping or pairs);
    signed_headers: the lowercase names to sign, in any order (they are sorted).  Raises
    KeyError for a signed header that is not in headers."""
    values = _header_values(headers)
    names = sorted(n.lower() for n in signed_headers)
    canon = "".join(f"{n}:{','.join(' '.join(v.split()) for v in values[n])}\n" for n in names)
    return "\n".join([method, sigv4_canonical_uri(raw_path, service),
                      sigv4_canonical_query(raw_query), canon, ";".join(names), payload_hash])


def sigv4_string_to_sign(canonical_request, amz_date, region, service="s3"):
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    digest = hashlib.sha256(canonical_request.encode()).hexdigest()
    return f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{digest}"


def sigv4_signing_key(secret_key, date, region, service="s3"):
    """kSigning = HMAC chain over date (YYYYMMDD), region, service, "aws4_request"."""
    def mac(key, msg):
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()
    k_date = mac(("AWS4" + secret_key).encode(), date)
    k_region = mac(k_date, region)
    k_service = mac(k_region, service)
    return mac(k_service, "aws4_request")


def sigv4_signature(secret_key, method, raw_path, raw_query, headers, signed_headers,
                    payload_hash, amz_date, region, service="s3"):
    """The hex SigV4 signature of a request (AWS's "Signature Version 4 signing process").

    raw_path/raw_query: the path and query as sent (percent-encoded, without '?');
    headers: the request's headers (mapping or pairs); signed_headers: lowercase names to
    sign; payload_hash: the hex sha256 of the body or "UNSIGNED-PAYLOAD"; amz_date:
    YYYYMMDDTHHMMSSZ."""
    creq = sigv4_canonical_request(method, raw_path, raw_query, headers, signed_headers,
                                   payload_hash, service)
    sts = sigv4_string_to_sign(creq, amz_date, region, service)
    key = sigv4_signing_key(secret_key, amz_date[:8], region, service)
    return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


def amz_date_now(offset=0):
    """The x-amz-date for now (+ offset seconds)."""
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return t.strftime("%Y%m%dT%H%M%SZ")


def sign_request(method, target, headers, access_key, secret_key, region="us-east-1",
                 service="s3", payload_hash=EMPTY_SHA256, amz_date=None, session_token=None,
                 signed_headers=None):
    """Signs a request the way an SDK does: returns a dict of headers = headers plus
    x-amz-date, x-amz-content-sha256, x-amz-security-token (with session_token) and
    Authorization.  target: path[?query] as sent; headers must hold Host.
    signed_headers: the names to sign (default: every header given)."""
    out = dict(headers)
    out["x-amz-date"] = amz_date or amz_date_now()
    out["x-amz-content-sha256"] = payload_hash
    if session_token is not None:
        out["x-amz-security-token"] = session_token
    path, _, query = target.partition("?")
    names = sorted({k.lower() for k in out} if signed_headers is None
                   else {k.lower() for k in signed_headers})
    sig = sigv4_signature(secret_key, method, path, query, out, names, payload_hash,
                          out["x-amz-date"], region, service)
    scope = f"{out['x-amz-date'][:8]}/{region}/{service}/aws4_request"
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={sig}")
    return out


S3Response = collections.namedtuple("S3Response", "status headers body")


def s3_request(endpoint, method, target, access_key, secret_key, region="us-east-1",
               body=b"", headers=None, session_token=None, payload_hash=None, amz_date=None,
               timeout=120):
    """One signed request to endpoint ("http://127.0.0.1:PORT") with http.client.
    body: bytes or a binary file object (then payload_hash and a Content-Length header must
    be given).  Returns S3Response(status, headers (HTTPMessage), body bytes)."""
    u = urllib.parse.urlsplit(endpoint)
    hdrs = {"Host": u.netloc, **(headers or {})}
    if isinstance(body, (bytes, bytearray)):
        if body or method in ("PUT", "POST"):
            hdrs.setdefault("Content-Length", str(len(body)))
        if payload_hash is None:
            payload_hash = hashlib.sha256(body).hexdigest()
    hdrs = sign_request(method, target, hdrs, access_key, secret_key, region,
                        payload_hash=payload_hash, amz_date=amz_date,
                        session_token=session_token)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        if hasattr(body, "read"):
            while True:
                chunk = body.read(1 << 20)
                if not chunk:
                    break
                conn.send(chunk)
        elif body:
            conn.send(body)
        resp = conn.getresponse()
        return S3Response(resp.status, resp.msg, resp.read())
    finally:
        conn.close()


def s3_error_code(body):
    """The <Code> of an S3 XML error body, or None."""
    m = re.search(rb"<Code>([^<]*)</Code>", body or b"")
    return m.group(1).decode() if m else None


# ---- the SigV4-checking S3 look-alike --------------------------------------------------------

class _S3Error(Exception):
    def __init__(self, status, code, message, **extra):
        super().__init__(code)
        self.status, self.code, self.message, self.extra = status, code, message, extra


_AUTH_RE = re.compile(r"AWS4-HMAC-SHA256\s+(.*)", re.S)


class _S3Handler(_Handler):
    def do_GET(self):
        self.server.owner._handle(self)

    do_HEAD = do_GET

    def _refuse(self):
        self.server.owner._handle(self, method_allowed=False)

    do_PUT = do_POST = do_DELETE = do_OPTIONS = do_PATCH = _refuse


class SigV4Server(_ThreadedService):
    """An S3 look-alike on 127.0.0.1:PORT that checks AWS Signature Version 4 (context
    manager).

    Serves GET and HEAD of /BUCKET/KEY (path-style; percent-encoded keys) from the file
    root_dir/BUCKET/KEY: Content-Length, ETag (quoted md5 of the file), Last-Modified,
    Accept-Ranges; a single Range (bytes=a-b, bytes=a-, bytes=-n) gets 206 with
    Content-Range, HEAD included, as S3 does; a range starting past the end gets 416
    InvalidRange; several ranges or a malformed one are ignored (200).  If-Match (412
    PreconditionFailed unless it names the ETag or is *), If-None-Match (304),
    If-Unmodified-Since (412) and If-Modified-Since (304) as S3 evaluates them, before
    Range.  No listing, no writes (405).  Keep-alive HTTP/1.1.

    Every request must carry an Authorization header with a valid AWS4-HMAC-SHA256 signature
    for access_key/secret_key and region (service s3) whose SignedHeaders include host,
    x-amz-date, x-amz-content-sha256, every other x-amz-* header present, and
    x-amz-security-token when session_token is set (it must equal it); x-amz-content-sha256
    must be the sha256 of the body or UNSIGNED-PAYLOAD; x-amz-date within 15 minutes of the
    server's clock (time.time() + .skew_seconds).  Refusals, with S3's XML error bodies:
    403 AccessDenied (no Authorization, no valid x-amz-date, headers not signed), 403
    InvalidAccessKeyId, 403 SignatureDoesNotMatch (with CanonicalRequest and StringToSign,
    as S3 sends them), 403 RequestTimeTooSkewed, 400 AuthorizationHeaderMalformed (wrong
    region/service/date in the credential scope, unparsable header), 400 InvalidRequest
    (other algorithms, no x-amz-content-sha256), 400 XAmzContentSHA256Mismatch, 400
    InvalidToken (missing, wrong or unexpected session token).  Authentication comes first,
    then the object (404 NoSuchBucket/NoSuchKey).

    Counters: .accepted, .rejected (requests whose signature was good / that were refused
    for authentication), .connections, .log: [dict(method, path, range, status, code,
    signed_headers)], appended before the response is sent.  .last_error: the last _S3Error
    refusal (code, message, extra) for assertion messages."""

    handler = _S3Handler

    def __init__(self, root_dir, access_key, secret_key, region="us-east-1",
                 session_token=None):
        super().__init__()
        self.root_dir = os.path.abspath(root_dir)
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.session_token = session_token
        self.skew_seconds = 0
        self.accepted = 0
        self.rejected = 0
        self.log = []
        self.last_error = None
        self._etags = {}

    @property
    def endpoint(self):
        return self.url

    # -- authentication -------------------------------------------------------------------------

    def _authenticate(self, h, raw_path, raw_query, body):
        auth = h.headers.get("Authorization")
        if auth is None:
            if "X-Amz-Algorithm" in urllib.parse.parse_qs(raw_query):
                raise _S3Error(403, "AccessDenied", "Presigned URLs are not supported here")
            raise _S3Error(403, "AccessDenied", "Access Denied")
        m = _AUTH_RE.fullmatch(auth.strip())
        if not m:
            raise _S3Error(400, "InvalidRequest",
                           "The authorization mechanism you have provided is not supported. "
                           "Please use AWS4-HMAC-SHA256.")
        parts = {}
        for comp in m.group(1).split(","):
            k, eq, v = comp.strip().partition("=")
            if not eq or k in parts:
                raise _S3Error(400, "AuthorizationHeaderMalformed",
                               "The authorization header is malformed")
            parts[k] = v.strip()
        if set(parts) != {"Credential", "SignedHeaders", "Signature"}:
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           "The authorization header requires three components: Credential, "
                           "SignedHeaders, and Signature.")
        cred = parts["Credential"].split("/")
        if len(cred) != 5:
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           "The authorization header is malformed; the Credential is "
                           "mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/"
                           "aws4_request\".")
        akid, date, region, service, term = cred
        if akid != self.access_key:
            raise _S3Error(403, "InvalidAccessKeyId",
                           "The AWS Access Key Id you provided does not exist in our records.",
                           AWSAccessKeyId=akid)
        amz_date = h.headers.get("x-amz-date")
        try:
            t = datetime.datetime.strptime(amz_date or "", "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
        except ValueError:
            raise _S3Error(403, "AccessDenied",
                           "AWS authentication requires a valid Date or x-amz-date header")
        if date != amz_date[:8]:
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           f"The authorization header is malformed; Invalid credential date "
                           f"\"{date}\". This date is not the same as X-Amz-Date: "
                           f"\"{amz_date[:8]}\".")
        if region != self.region:
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           f"The authorization header is malformed; the region '{region}' is "
                           f"wrong; expecting '{self.region}'", Region=self.region)
        if service != "s3" or term != "aws4_request":
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           f"The authorization header is malformed; incorrect service "
                           f"\"{service}\" or terminal \"{term}\". This endpoint uses \"s3\".")
        now = time.time() + self.skew_seconds
        if abs(now - t) > 15 * 60:
            raise _S3Error(403, "RequestTimeTooSkewed",
                           "The difference between the request time and the current time is "
                           "too large.", RequestTime=amz_date,
                           ServerTime=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))
        payload = h.headers.get("x-amz-content-sha256")
        if payload is None:
            raise _S3Error(400, "InvalidRequest",
                           "Missing required header for this request: x-amz-content-sha256")
        actual = hashlib.sha256(body).hexdigest()
        if payload != UNSIGNED_PAYLOAD and payload != actual:
            raise _S3Error(400, "XAmzContentSHA256Mismatch",
                           "The provided 'x-amz-content-sha256' header does not match what "
                           "was computed.", ClientComputedContentSHA256=payload,
                           S3ComputedContentSHA256=actual)
        signed = parts["SignedHeaders"].split(";")
        if signed != sorted(signed) or any(s != s.lower() or not s for s in signed):
            raise _S3Error(400, "AuthorizationHeaderMalformed",
                           "The authorization header is malformed; SignedHeaders must be "
                           "lower case and sorted")
        present = {k.lower() for k in h.headers.keys()}
        need = {"host", "x-amz-date", "x-amz-content-sha256"}
        need |= {k for k in present if k.startswith("x-amz-")}
        not_signed = sorted(need - set(signed))
        if not_signed:
            raise _S3Error(403, "AccessDenied",
                           "There were headers present in the request which were not signed",
                           HeadersNotSigned=", ".join(not_signed))
        token = h.headers.get("x-amz-security-token")
        if token != self.session_token:
            raise _S3Error(400, "InvalidToken",
                           "The provided token is malformed or otherwise invalid.")
        try:
            creq = sigv4_canonical_request(h.command, raw_path, raw_query, h.headers, signed,
                                           payload)
        except KeyError as e:
            raise _S3Error(403, "SignatureDoesNotMatch",
                           f"The request signature we calculated does not match the signature "
                           f"you provided: signed header {e} is missing")
        sts = sigv4_string_to_sign(creq, amz_date, self.region)
        key = sigv4_signing_key(self.secret_key, date, self.region)
        want = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, parts["Signature"]):
            raise _S3Error(403, "SignatureDoesNotMatch",
                           "The request signature we calculated does not match the signature "
                           "you provided. Check your key and signing method.",
                           AWSAccessKeyId=akid, StringToSign=sts,
                           SignatureProvided=parts["Signature"], CanonicalRequest=creq)
        return signed

    # -- objects --------------------------------------------------------------------------------

    def _etag(self, path, st):
        k = (path, st.st_size, st.st_mtime_ns, st.st_ino)
        with self._lock:
            if k in self._etags:
                return self._etags[k]
        md5 = hashlib.md5()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                md5.update(chunk)
        etag = f'"{md5.hexdigest()}"'
        with self._lock:
            self._etags[k] = etag
        return etag

    def _locate(self, raw_path):
        segs = raw_path.split("/")[1:]
        bucket = urllib.parse.unquote(segs[0]) if segs else ""
        key = urllib.parse.unquote("/".join(segs[1:]))
        if not bucket or "/" in bucket or bucket in (".", ".."):
            raise _S3Error(404, "NoSuchBucket", "The specified bucket does not exist")
        bdir = os.path.join(self.root_dir, bucket)
        if not os.path.isdir(bdir):
            raise _S3Error(404, "NoSuchBucket", "The specified bucket does not exist",
                           BucketName=bucket)
        path = os.path.join(bdir, key)
        if (not key or any(p in (".", "..") for p in key.split("/"))
                or not os.path.isfile(path)):
            raise _S3Error(404, "NoSuchKey", "The specified key does not exist.", Key=key)
        return path

    @staticmethod
    def _range(spec, size):
        """(start, end) inclusive, None for no (or an ignored) range; raises for 416."""
        m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", spec or "")
        if not m or (not m.group(1) and not m.group(2)):
            return None
        a, b = m.group(1), m.group(2)
        if not a:
            n = int(b)
            if n == 0:
                raise _S3Error(416, "InvalidRange", "The requested range is not satisfiable",
                               RangeRequested=spec, ActualObjectSize=str(size))
            return max(0, size - n), size - 1
        start = int(a)
        end = int(b) if b else size - 1
        if b and end < start:
            return None
        if start >= size:
            raise _S3Error(416, "InvalidRange", "The requested range is not satisfiable",
                           RangeRequested=spec, ActualObjectSize=str(size))
        return start, min(end, size - 1)

    @staticmethod
    def _etag_in(header, etag):
        return any(t.strip() in (etag, "*") or t.strip() == "W/" + etag
                   for t in header.split(","))

    def _conditions(self, h, etag, mtime):
        """(None, None), or (304 or 412, the header that calls for it), S3's way."""
        def date(name):
            v = h.headers.get(name)
            try:
                return email.utils.parsedate_to_datetime(v).timestamp() if v else None
            except (TypeError, ValueError):
                return None
        im, inm = h.headers.get("If-Match"), h.headers.get("If-None-Match")
        ius, ims = date("If-Unmodified-Since"), date("If-Modified-Since")
        mtime = int(mtime)
        if im is not None and not self._etag_in(im, etag):
            return 412, "If-Match"
        if im is None and ius is not None and mtime > ius:
            return 412, "If-Unmodified-Since"
        if inm is not None and self._etag_in(inm, etag):
            return 304, "If-None-Match"
        if inm is None and ims is not None and mtime <= ims:
            return 304, "If-Modified-Since"
        return None, None

    # -- one request ----------------------------------------------------------------------------

    def _send_error(self, h, err):
        rid = uuid.uuid4().hex[:16].upper()
        extra = "".join(f"<{k}>{xml_escape(str(v))}</{k}>" for k, v in err.extra.items())
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{err.code}</Code>'
                f"<Message>{xml_escape(err.message)}</Message>{extra}"
                f"<RequestId>{rid}</RequestId></Error>").encode()
        h.send_response(err.status)
        h.send_header("Content-Type", "application/xml")
        h.send_header("Content-Length", str(len(body)))
        h.send_header("x-amz-request-id", rid)
        if err.status == 416 and "ActualObjectSize" in err.extra:
            h.send_header("Content-Range", f"bytes */{err.extra['ActualObjectSize']}")
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def _record(self, h, raw_path, status, code, signed):
        with self._lock:
            self.log.append({"method": h.command, "path": raw_path,
                             "range": h.headers.get("Range"), "status": status, "code": code,
                             "signed_headers": signed})

    def _handle(self, h, method_allowed=True):
        u = urllib.parse.urlsplit(h.path)
        raw_path, raw_query = u.path, u.query
        signed = None
        body = h.read_body()
        try:
            try:
                signed = self._authenticate(h, raw_path, raw_query, body)
            except _S3Error as e:
                with self._lock:
                    self.rejected += 1
                    self.last_error = e
                raise
            with self._lock:
                self.accepted += 1
            if not method_allowed:
                raise _S3Error(405, "MethodNotAllowed",
                               "The specified method is not allowed against this resource.",
                               Method=h.command)
            self._serve(h, raw_path, signed)
        except _S3Error as e:
            self._record(h, raw_path, e.status, e.code, signed)
            self._send_error(h, e)

    def _serve(self, h, raw_path, signed):
        path = self._locate(raw_path)
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            etag = self._etag(path, st)
            cond, which = self._conditions(h, etag, st.st_mtime)
            if cond == 412:
                raise _S3Error(412, "PreconditionFailed",
                               "At least one of the pre-conditions you specified did not hold",
                               Condition=which)
            headers = [("ETag", etag),
                       ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                       ("Accept-Ranges", "bytes"), ("x-amz-request-id", uuid.uuid4().hex[:16])]
            if cond == 304:
                self._record(h, raw_path, 304, None, signed)
                h.send_response(304)
                for k, v in headers:
                    h.send_header(k, v)
                h.end_headers()
                return
            rng = self._range(h.headers.get("Range"), size)
            start, end = rng if rng else (0, size - 1)
            status = 206 if rng else 200
            self._record(h, raw_path, status, None, signed)
            h.send_response(status)
            for k, v in headers:
                h.send_header(k, v)
            h.send_header("Content-Type", "application/octet-stream")
            h.send_header("Content-Length", str(end + 1 - start))
            if rng:
                h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            h.end_headers()
            if h.command != "HEAD" and end >= start:
                h.connection.sendfile(f, start, end + 1 - start)


# ---- s3rver ------------------------------------------------------------------------------------

def s3rver_path():
    """s3rver's executable ($TARSEEK_S3RVER, else /opt/s3rver/...), or None if missing."""
    p = os.environ.get("TARSEEK_S3RVER") or S3RVER_DEFAULT
    if os.path.isfile(p) and os.access(p, os.X_OK) and shutil.which("node"):
        return p
    return None


def require_s3rver():
    """Skips the calling test unless s3rver (and node) is installed."""
    if s3rver_path() is None:
        import pytest
        pytest.skip("s3rver is not installed (set TARSEEK_S3RVER or install it to "
                    f"{S3RVER_DEFAULT})")


class S3rver:
    """s3rver (npm, 3.7.1) on 127.0.0.1:PORT storing its data in tmp_dir/s3rver-N (context
    manager).  .endpoint = .url = "http://127.0.0.1:PORT", .port, .log_file.

    s3rver serves path-style /BUCKET/KEY with single ranges (206), but it knows one access
    key only, S3RVER (secret S3RVER; any other is 403 InvalidAccessKeyId), and does not
    check V4 signatures at all.  create_bucket() and put_object() send requests signed like
    an SDK's with those credentials; request() any other signed request."""

    _counter = 0
    access_key = S3RVER_ACCESS_KEY
    secret_key = S3RVER_SECRET_KEY

    def __init__(self, tmp_dir, binary=None):
        S3rver._counter += 1
        self.binary = binary or s3rver_path()
        self.dir = os.path.join(os.path.abspath(tmp_dir), f"s3rver-{S3rver._counter}")
        self.log_file = os.path.join(self.dir, "s3rver.log")
        self.proc = None
        self.port = None
        self.url = self.endpoint = None

    def __enter__(self):
        if self.binary is None:
            raise RuntimeError("s3rver is not installed")
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        for attempt in range(5):
            port = free_port()
            with open(self.log_file, "wb") as log:
                self.proc = subprocess.Popen(
                    [self.binary, "--address", HOST, "--port", str(port), "--directory", data,
                     "--silent"], stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                ready = wait_port(port, timeout=90, proc=self.proc)
            except RuntimeError:
                _stop_process(self.proc)
                raise
            if ready:
                self.port = port
                self.url = self.endpoint = f"http://{HOST}:{port}"
                self._wait_http()
                return self
            out = _read(self.log_file)
            _stop_process(self.proc)
            if "EADDRINUSE" not in out:
                raise RuntimeError(f"s3rver exited with {self.proc.returncode}:\n{out}")
        raise RuntimeError("s3rver found no free port")

    def _wait_http(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
                conn.request("GET", "/")
                conn.getresponse().read()
                conn.close()
                return
            except (OSError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __exit__(self, *exc):
        if self.proc is not None:
            _stop_process(self.proc)
            self.proc = None

    def request(self, method, target, body=b"", headers=None, **kw):
        """A request signed with s3rver's credentials: S3Response."""
        return s3_request(self.endpoint, method, target, self.access_key, self.secret_key,
                          body=body, headers=headers, **kw)

    def create_bucket(self, bucket):
        r = self.request("PUT", "/" + _uri_encode(bucket))
        if r.status != 200:
            raise RuntimeError(f"s3rver: creating bucket {bucket}: {r.status} {r.body!r}")

    def put_object(self, bucket, key, data):
        """Uploads data (bytes, or the path of a file) as bucket/key; returns its ETag."""
        target = "/" + _uri_encode(bucket) + "/" + _uri_encode(key, slash=False)
        if isinstance(data, (bytes, bytearray)):
            r = self.request("PUT", target, bytes(data))
        else:
            sha = hashlib.sha256()
            with open(data, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    sha.update(chunk)
                size = f.tell()
                f.seek(0)
                r = self.request("PUT", target, f, headers={"Content-Length": str(size)},
                                 payload_hash=sha.hexdigest())
        if r.status != 200:
            raise RuntimeError(f"s3rver: putting {bucket}/{key}: {r.status} {r.body!r}")
        return r.headers.get("ETag")
