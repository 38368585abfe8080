import Foundation

/// An HTTP origin that misbehaves on purpose (Python's standard library, on 127.0.0.1): the first path segment
/// picks a behaviour, the rest names a file under the root.
///
/// - `ok`: ranged GETs and HEADs with a strong ETag, `Last-Modified` and `If-Match`. Of several ranges, only
///   the first is sent (a 206 of one part), as a server without multi-range support may answer.
/// - `status-CODE`: every request answers CODE.
/// - `retry-429-N`, `fail-5xx-N`: the first N requests of a path answer 429 (`Retry-After: 1`) or 503.
/// - `flaky-P`: P % of requests, at random, answer 503 or send half the body and reset the connection; the
///   next 4 requests of that path succeed (so a retry gets through: independent failures, not an outage).
/// - `reset-N`, `short-N`: the first N GETs of a path send half the body, then reset the connection or close it.
/// - `stall`: never answers. `stall-body`: sends the head and 4 KiB, then nothing.
/// - `changing`: the k-th GET of a path serves version k % 2 (version 1: every byte XOR 0xFF, another ETag);
///   `If-Match` is checked against the version being served.
/// - `no-etag`, `weak-etag`: `Last-Modified` only, or a weak ETag. `ignore-range`: always 200 with the whole file.
/// - `slow`: every GET waits 100 ms first; ``mostInFlight()`` says how many waited at once.
public final class FaultOrigin: TestServer, @unchecked Sendable {
    public let port: Int
    private let directory: String
    private let process: Process

    public static var unavailableReason: String? {
        ServerProcess.python == nil ? "python3 is not installed: apt-get install python3" : nil
    }

    private init(port: Int, directory: String, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// `http://127.0.0.1:PORT/BEHAVIOUR/`.
    public func baseURL(behaviour: String) -> String { "http://127.0.0.1:\(port)/\(behaviour)/" }

    public static func start(root: URL) async throws -> FaultOrigin {
        guard let python = ServerProcess.python else { throw ServerError(unavailableReason ?? "no python3") }
        let directory = NSTemporaryDirectory() + "fault-origin-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try script.write(toFile: directory + "/origin.py", atomically: true, encoding: .utf8)
        let port = try ServerProcess.freePort()
        let log = directory + "/stdout.log"
        let process = try ServerProcess.launch(
            [python, directory + "/origin.py", root.path, String(port), directory + "/requests.log"], log: log)
        try await ServerProcess.waitUntilListening(port, process: process, log: log)
        return FaultOrigin(port: port, directory: directory, process: process)
    }

    /// Every request so far (those answered, and those a stall holds), oldest first.
    public func requests() async throws -> [FaultRequest] {
        let text = (try? String(contentsOfFile: directory + "/requests.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(FaultRequest.init)
    }

    /// Forgets the requests and the per-path counters.
    public func clear() async throws {
        let answer = try ServerProcess.exchange(port, "POST /__clear HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
        guard answer.hasPrefix("HTTP/1.0 204") || answer.hasPrefix("HTTP/1.1 204") else {
            throw ServerError("the fault origin did not clear: \(answer.prefix(80))")
        }
    }

    /// The most `slow` requests that were in flight at once since the start or the last ``clear()``.
    public func mostInFlight() async throws -> Int {
        let answer = try ServerProcess.exchange(port, "POST /__most-in-flight HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
        guard let body = answer.components(separatedBy: "\r\n\r\n").last, let most = Int(body) else {
            throw ServerError("the fault origin did not say how many requests were in flight: \(answer.prefix(80))")
        }
        return most
    }

    public func stop() async {
        await ServerProcess.stop(process)
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static let script = #"""
        import email.utils, os, random, socket, struct, sys, threading, time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        ROOT, PORT, LOG = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        lock = threading.Lock()
        counts = {}
        in_flight = [0, 0]  # now, most ever (behaviour `slow`)
        failed_last = {}  # path -> requests still spared after `flaky-P` failed one (so its retry gets through)

        def count(key):
            with lock:
                counts[key] = counts.get(key, 0) + 1
                return counts[key] - 1

        def log(method, path, rng, if_match, status):
            with lock, open(LOG, "a") as f:
                f.write("\t".join([method, path, rng or "-", if_match or "-", str(status)]) + "\n")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass

            def do_POST(self):
                if self.path == "/__most-in-flight":
                    body = str(in_flight[1]).encode()
                    self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                    self.wfile.write(body)
                    return
                if self.path == "/__clear":
                    with lock:
                        counts.clear()
                        in_flight[1] = in_flight[0]
                        open(LOG, "w").close()
                    self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers()

            def do_HEAD(self): self.serve(head=True)
            def do_GET(self): self.serve(head=False)

            def answer(self, status, body=b"", headers=()):
                log(self.command, self.path, self.headers.get("Range"), self.headers.get("If-Match"), status)
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD": self.wfile.write(body)

            def serve(self, head):
                if self.path.startswith("/s3-same-token"):  # an S3 listing that hands back the token it was sent
                    return self.answer(200, b"<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken>"
                                       b"<Contents><Key>a.bin</Key><Size>1</Size><ETag>&quot;e&quot;</ETag></Contents></ListBucketResult>")
                parts = self.path.lstrip("/").split("/", 1)
                if len(parts) < 2: return self.answer(404, b"no file")
                behaviour, name = parts
                path = os.path.join(ROOT, name)
                key = (behaviour, name)
                if behaviour.startswith("status-"):
                    return self.answer(int(behaviour[7:]), b"status on purpose")
                if behaviour.startswith("retry-429-") and count(key) < int(behaviour[10:]):
                    return self.answer(429, b"slow down", [("Retry-After", "1")])
                if behaviour.startswith("fail-5xx-") and count(key) < int(behaviour[9:]):
                    return self.answer(503, b"unavailable")
                with lock:
                    spared = failed_last.get(key, 0)
                    flaky = behaviour.startswith("flaky-") and not spared and random.random() * 100 < int(behaviour[6:])
                    failed_last[key] = 4 if flaky else max(0, spared - 1)
                if flaky and random.random() < 0.5:
                    return self.answer(503, b"unavailable at random")
                if behaviour == "slow" and not head:
                    with lock:
                        in_flight[0] += 1
                        in_flight[1] = max(in_flight[1], in_flight[0])
                    time.sleep(0.1)
                    with lock:
                        in_flight[0] -= 1
                if behaviour == "stall":
                    log(self.command, self.path, self.headers.get("Range"), self.headers.get("If-Match"), 0)
                    time.sleep(3600); return
                if not os.path.isfile(path): return self.answer(404, b"no such file")
                data = open(path, "rb").read()
                st = os.stat(path)
                version = 0
                if behaviour == "changing" and not head:
                    version = count(key) % 2
                    if version: data = bytes(b ^ 0xFF for b in data)
                etag = '"v%d-%x-%x"' % (version, len(data), st.st_mtime_ns)
                headers = [("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))]
                if behaviour == "weak-etag": headers.append(("ETag", "W/" + etag))
                elif behaviour != "no-etag": headers.append(("ETag", etag))
                if_match = self.headers.get("If-Match")
                if if_match and behaviour not in ("no-etag", "weak-etag") and if_match != etag:
                    return self.answer(412, b"precondition failed")
                size, status, start, end = len(data), 200, 0, len(data)
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and behaviour != "ignore-range":
                    a, _, b = rng[6:].split(",")[0].partition("-")  # of several ranges, only the first
                    start = int(a); end = min(size, int(b) + 1) if b else size
                    if start >= size:
                        return self.answer(416, b"", [("Content-Range", "bytes */%d" % size)] + headers)
                    status = 206
                    headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size)))
                body = data[start:end]
                if head: body = b""
                if flaky and not head:
                    return self.broken(status, headers, body, reset=True)
                if behaviour.startswith("reset-") and not head and count(key) < int(behaviour[6:]):
                    return self.broken(status, headers, body, reset=True)
                if behaviour.startswith("short-") and not head and count(key) < int(behaviour[6:]):
                    return self.broken(status, headers, body, reset=False)
                if behaviour == "stall-body" and not head:
                    log(self.command, self.path, rng, if_match, status)
                    self.send_response(status)
                    for k, v in headers: self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[:4096]); self.wfile.flush()
                    time.sleep(3600); return
                log(self.command, self.path, rng, if_match, status)
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if head else len(body)))
                self.end_headers()
                if not head: self.wfile.write(body)

            def broken(self, status, headers, body, reset):
                log(self.command, self.path, self.headers.get("Range"), self.headers.get("If-Match"), status)
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2]); self.wfile.flush()
                if reset:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        Server(("127.0.0.1", PORT), Handler).serve_forever()
        """#
}

/// One request a ``FaultOrigin`` saw; `status` 0 for one it holds without answering.
public struct FaultRequest: Sendable, Equatable {
    public let method: String
    public let path: String
    public let range: String?
    public let ifMatch: String?
    public let status: Int

    init?(_ line: Substring) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 5, let status = Int(fields[4]) else { return nil }
        method = fields[0]
        path = fields[1]
        range = fields[2] == "-" ? nil : fields[2]
        ifMatch = fields[3] == "-" ? nil : fields[3]
        self.status = status
    }
}
