import Foundation

/// Debian's nginx serving a directory on 127.0.0.1 with a generated config: strong ETags, `Range`, keep-alive,
/// a JSON autoindex, and an access log the tests read to count requests and bytes.
public final class NginxServer: TestServer, @unchecked Sendable {
    public let port: Int
    /// `http://127.0.0.1:PORT/` (`https` for a TLS server).
    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)/" }
    private let scheme: String
    private let directory: String
    private let process: Process

    public static var unavailableReason: String? {
        Capabilities.path(of: "nginx") == nil
            ? "nginx is not installed: run scripts/install-deps.sh (Debian package nginx-light)" : nil
    }

    private init(port: Int, directory: String, process: Process, scheme: String) {
        self.scheme = scheme
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts nginx serving `root`; with `tls`, over HTTPS with a self-signed certificate made for the run
    /// (which no client trusts: the TLS failure tests). `port` picks the port (an origin restarted where it
    /// was); by default a free one. The listing settings are the ones the Origins article asks for; with
    /// `servingIndexFiles`, nginx keeps its stock `index index.html`, so a folder's index.html is served in
    /// place of its listing. `maxRanges` sets nginx's `max_ranges`: a request of more ranges is answered
    /// 200 with the whole file (0 turns `Range` off).
    public static func start(
        root: URL, tls: Bool = false, port: Int? = nil, servingIndexFiles: Bool = false, maxRanges: Int? = nil
    ) async throws -> NginxServer {
        guard let nginx = Capabilities.path(of: "nginx") else { throw ServerError(unavailableReason ?? "no nginx") }
        let directory = NSTemporaryDirectory() + "nginx-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let port = try port ?? ServerProcess.freePort()
        var listen = "listen 127.0.0.1:\(port);"
        if tls {
            try runTool(
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem")
            listen =
                "listen 127.0.0.1:\(port) ssl; ssl_certificate \(directory)/cert.pem; ssl_certificate_key \(directory)/key.pem;"
        }
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 1024; }
            http {
                types { application/octet-stream bin; }
                default_type application/octet-stream;
                client_body_temp_path \(directory)/body;
                proxy_temp_path \(directory)/proxy;
                fastcgi_temp_path \(directory)/fastcgi;
                uwsgi_temp_path \(directory)/uwsgi;
                scgi_temp_path \(directory)/scgi;
                log_format probe '$request_method\\t$request_uri\\t$http_range\\t$http_if_match\\t$status\\t$bytes_sent\\t$request_time\\t$connection_requests';
                access_log \(directory)/access.log probe;
                sendfile on;
                keepalive_requests 100000;
                keepalive_timeout 60s;
                server {
                    \(listen)
                    root \(root.path);
                    etag on;
                    autoindex on;
                    autoindex_format json;
                    \(servingIndexFiles ? "" : "index \(Self.noIndexFile);")
                    \(maxRanges.map { "max_ranges \($0);" } ?? "")
                }
            }
            """
        try config.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let log = directory + "/stdout.log"
        let process = try ServerProcess.launch([nginx, "-c", directory + "/nginx.conf", "-p", directory], log: log)
        try await ServerProcess.waitUntilListening(port, process: process, log: log)
        return NginxServer(port: port, directory: directory, process: process, scheme: tls ? "https" : "http")
    }

    /// The `index` file the Origins article's nginx settings name: a name no real file has, so every folder
    /// gets its JSON listing.
    public static let noIndexFile = ".chunkcache-no-index"

    /// Every request logged so far, oldest first.
    public func accessLog() async throws -> [AccessLogEntry] {
        let text = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap(AccessLogEntry.init)
    }

    /// The log once it holds at least `count` requests (nginx writes a line after each response).
    public func accessLog(atLeast count: Int, timeout: Duration = .seconds(5)) async throws -> [AccessLogEntry] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let entries = try await accessLog()
            if entries.count >= count || ContinuousClock.now >= deadline { return entries }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Forgets the requests logged so far.
    public func clearAccessLog() async throws {
        // nginx appends (O_APPEND), so truncating in place is seen at once.
        guard truncate(directory + "/access.log", 0) == 0 || errno == ENOENT else {
            throw ServerError("truncate: errno \(errno)")
        }
    }

    public func stop() async {
        await ServerProcess.stop(process)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One line of ``NginxServer``'s access log.
public struct AccessLogEntry: Sendable, Equatable {
    public let method: String
    public let uri: String
    public let range: String?
    public let ifMatch: String?
    public let status: Int
    public let bytesSent: Int
    public let requestTime: Double
    /// Which request this was on its connection: 1 for the first, on a connection opened for it.
    public let connectionRequests: Int

    init?(_ line: Substring) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 8, let status = Int(fields[4]), let bytes = Int(fields[5]),
            let connectionRequests = Int(fields[7])
        else { return nil }
        self.connectionRequests = connectionRequests
        method = fields[0]
        uri = fields[1]
        range = fields[2] == "-" ? nil : fields[2]
        // nginx escapes a `"` in a logged header as `\x22`.
        ifMatch = fields[3] == "-" ? nil : fields[3].replacingOccurrences(of: "\\x22", with: "\"")
        self.status = status
        bytesSent = bytes
        requestTime = Double(fields[6]) ?? 0
    }

    /// The bytes the request's `Range: bytes=a-b` asked for; nil without a range of that form.
    public var requestedBytes: Range<Int64>? {
        guard let range, range.hasPrefix("bytes=") else { return nil }
        let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
        return bounds[0]..<(bounds[1] + 1)
    }
}
