import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real server the tests start on 127.0.0.1 (nginx, moto, a fault-injecting origin).
public protocol TestServer {
    /// nil when the server can run here; else what is missing and how to install it.
    static var unavailableReason: String? { get }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where `server` can run, saying why it skips otherwise; under CI (`CI=true`) it always
    /// runs, so a CI machine without the server fails instead of passing quietly.
    public static func requires(_ server: (some TestServer).Type) -> Self {
        let reason = server.unavailableReason
        let ci = ProcessInfo.processInfo.environment["CI"] == "true"
        return .enabled(if: reason == nil || ci, Comment(rawValue: reason ?? "the server is available"))
    }
}

/// Shared plumbing of the test servers.
enum ServerProcess {
    /// The python3 interpreter of the test's own `PATH` (where `scripts/install-deps.sh` put moto), resolved
    /// to its executable; nil without one.
    static let python: String? = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let path = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0 && !path.isEmpty ? path : nil
    }()

    /// Whether `python` imports `modules` (comma-separated).
    static func pythonHas(_ modules: String) -> Bool {
        guard let python else { return false }
        return (try? runTool(python, "-c", "import \(modules)")) != nil
    }

    /// A TCP port free on 127.0.0.1 now (the kernel's pick for port 0).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ServerError("bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return connectLoopback(fd, port)
    }

    /// Connects `fd` to 127.0.0.1:`port`.
    private static func connectLoopback(_ fd: Int32, _ port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Sends `request` to 127.0.0.1:`port` and returns what comes back until the server closes (a short
    /// control request of a test server; blocks for one local round trip).
    static func exchange(_ port: Int, _ request: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket: errno \(errno)") }
        defer { close(fd) }
        guard connectLoopback(fd, port) else { throw ServerError("connect to port \(port): errno \(errno)") }
        let bytes = Array(request.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw ServerError("write: errno \(errno)") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            answer += buffer[..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Starts `arguments` so that it dies with the test process (`setpriv --pdeathsig KILL`): a crashed test
    /// leaves no server behind.
    static func launch(_ arguments: [String], environment: [String: String] = [:], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--pdeathsig", "KILL", "--"] + arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        process.environment = env
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try SpawningThread.shared.run { try process.run() }
        return process
    }

    /// Waits (polling, never blocking a thread for long) until `port` accepts connections.
    static func waitUntilListening(_ port: Int, process: Process, log: String, timeout: Duration = .seconds(20))
        async throws
    {
        let deadline = ContinuousClock.now + timeout
        while !accepts(port) {
            guard process.isRunning else {
                throw ServerError(
                    "\(process.arguments?.joined(separator: " ") ?? "server") exited: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")"
                )
            }
            guard ContinuousClock.now < deadline else {
                throw ServerError("nothing listens on port \(port) after \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Stops a server and waits for it to go.
    static func stop(_ process: Process) async {
        // SIGKILL: a child of the test process may inherit a signal mask that blocks SIGTERM, and a test
        // server has nothing to save.
        kill(process.processIdentifier, SIGKILL)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Waiting for a child blocks: a Dispatch thread does it, not the cooperative pool.
            DispatchQueue.global().async {
                process.waitUntilExit()
                done.resume()
            }
        }
    }
}

/// The one thread that starts servers. `PR_SET_PDEATHSIG` fires when the *thread* that forked the child
/// ends, and pool threads come and go: forking from a thread that lives as long as the process makes the
/// signal mean "the test process died".
final class SpawningThread: @unchecked Sendable {
    static let shared = SpawningThread()
    private let lock = NSCondition()
    private var jobs: [() -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                lock.lock()
                while jobs.isEmpty { lock.wait() }
                let job = jobs.removeFirst()
                lock.unlock()
                job()
            }
        }
        thread.name = "test-server-spawner"
        thread.start()
    }

    /// Runs `body` on the spawning thread and waits for it.
    func run(_ body: @escaping () throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: (any Error)?
        lock.lock()
        jobs.append {
            do { try body() } catch { failure = error }
            done.signal()
        }
        lock.signal()
        lock.unlock()
        done.wait()
        if let failure { throw failure }
    }
}

/// A test server that would not start.
public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
