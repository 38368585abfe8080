import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Running the CLI

/// What one run of `chunkcache` (or `chunkcache-bench`) printed and how it ended.
struct CLIResult: Sendable, CustomStringConvertible {
    var exitCode: Int32
    /// True when the process died of a signal (a crash); `exitCode` is then the signal number.
    var terminatedBySignal: Bool
    var stdout: String
    var stderr: String
    var arguments: [String]
    /// The program that ran, by name.
    var program = "chunkcache"

    var description: String {
        "\(program) \(arguments.joined(separator: " ")) → \(terminatedBySignal ? "signal" : "exit") \(exitCode)\nstdout: \(stdout)\nstderr: \(stderr)"
    }

    /// stdout parsed as the one JSON object `--json` promises.
    func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try parseJSONObject(stdout, sourceLocation: sourceLocation)
    }
}

/// A started `chunkcache` process whose output goes to files (so many can run at once without pipe stalls).
final class CLIProcess: @unchecked Sendable {
    // Only the thread that created it touches `process`; the semaphore is thread-safe.
    private let process = Process()
    private let exited = DispatchSemaphore(value: 0)
    private let stdoutPath: String
    private let stderrPath: String
    let arguments: [String]
    let executable: String

    /// Starts `chunkcache arguments` (or `executable`'s) with the test environment plus `environment` (a nil value
    /// removes a variable).
    init(
        _ arguments: [String], environment: [String: String?] = [:], currentDirectory: String? = nil,
        executable: String = ChunkCacheBinary.path ?? "chunkcache"
    ) throws {
        self.arguments = arguments
        self.executable = executable
        let id = UUID().uuidString
        stdoutPath = NSTemporaryDirectory() + "/chunkcache-cli-\(id).out"
        stderrPath = NSTemporaryDirectory() + "/chunkcache-cli-\(id).err"
        try TestData.write([], to: stdoutPath)
        try TestData.write([], to: stderrPath)
        var env = ProcessInfo.processInfo.environment
        // The tests always say which store they mean; nothing from the developer's shell leaks in.
        env["CHUNKCACHE_STORE"] = nil
        env["COLUMNS"] = nil
        // A crash is reported by its signal; the backtracer would only slow it down and flood the log.
        env["SWIFT_BACKTRACE"] = "enable=no"
        // A command that downloaded settles before it ends, so what a test reads next is settled; the
        // settler a command leaves behind by default has tests of its own.
        env["CHUNKCACHE_SETTLE"] = "wait"
        for (key, value) in environment { env[key] = value }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = env
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    /// Sends SIGKILL: the process dies wherever it is, as in a crash.
    func kill9() { kill(process.processIdentifier, SIGKILL) }

    /// Sends `signal` (SIGTERM, SIGINT…).
    func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Whether the process ends within `seconds`; it is left running either way.
    func ends(within seconds: Double) -> Bool {
        guard exited.wait(timeout: .now() + seconds) == .success else { return false }
        exited.signal()  // ``wait(timeout:)`` waits for the same signal
        return true
    }

    /// Waits for the process to end (killing it after `timeout` seconds) and collects its output.
    func wait(timeout: Double = 60) -> CLIResult {
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            Issue.record("\(executable) \(arguments.joined(separator: " ")) ran longer than \(timeout) s; killed")
            // SIGKILL, not SIGTERM: a process that hangs may be past handling a signal (a mount whose FUSE
            // workers still wait on the device), and the test must end either way.
            kill9()
            exited.wait()
        }
        process.waitUntilExit()
        defer {
            unlink(stdoutPath)
            unlink(stderrPath)
        }
        let out = (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        return CLIResult(
            exitCode: process.terminationStatus, terminatedBySignal: process.terminationReason == .uncaughtSignal,
            stdout: out, stderr: err, arguments: arguments, program: URL(fileURLWithPath: executable).lastPathComponent)
    }
}

/// Processes that only open a store, one after another on `count` threads until stopped: each runs `stat`,
/// and so the crash clean-up every open does, beside whatever else the test runs on the store.
final class Openers: Sendable {
    private let state = Mutex((stopping: false, opens: 0, failures: [String]()))
    private let done = DispatchGroup()

    init(store: String, count: Int = 2) {
        for _ in 0..<count {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                while !state.withLock({ $0.stopping }) {
                    let result: CLIResult
                    do { result = try runCLI(["--store", store, "--json", "stat"]) } catch {
                        state.withLock { $0.failures.append("\(error)") }
                        return
                    }
                    state.withLock { state in
                        state.opens += 1
                        if result.exitCode != 0 || result.terminatedBySignal { state.failures.append("\(result)") }
                    }
                }
            }
        }
    }

    /// Stops the openers once their runs end; returns how many opens there were and those that failed.
    func stop() -> (opens: Int, failures: [String]) {
        state.withLock { $0.stopping = true }
        done.wait()
        return state.withLock { ($0.opens, $0.failures) }
    }
}

/// Runs `chunkcache arguments` to completion. Callers check `exitCode` and `terminatedBySignal`.
@discardableResult
func runCLI(_ arguments: [String], env: [String: String?] = [:], currentDirectory: String? = nil) throws -> CLIResult {
    try CLIProcess(arguments, environment: env, currentDirectory: currentDirectory).wait()
}

/// Runs `chunkcache-bench arguments` to completion. Callers check `exitCode` and `terminatedBySignal`.
func runBench(_ arguments: [String]) throws -> CLIResult {
    try CLIProcess(arguments, executable: ChunkCacheBinary.benchPath ?? "chunkcache-bench").wait()
}

/// Runs `chunkcache --store store --json arguments…`, expects exit 0, and returns the JSON object.
@discardableResult
func runJSON(_ store: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws
    -> [String: Any]
{
    let result = try runCLI(["--store", store, "--json"] + arguments)
    try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)", sourceLocation: sourceLocation)
    return try result.json(sourceLocation: sourceLocation)
}

// MARK: - JSON

/// Parses `text` as exactly one JSON object (one line, as `--json` prints it).
func parseJSONObject(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(!trimmed.contains("\n"), "stdout holds more than one line: \(text)", sourceLocation: sourceLocation)
    let value = try JSONSerialization.jsonObject(with: Data(trimmed.utf8), options: [])
    return try #require(
        value as? [String: Any], "stdout is not one JSON object: \(text)", sourceLocation: sourceLocation)
}

extension Dictionary where Key == String, Value == Any {
    func int(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
        let number = try #require(
            self[key] as? NSNumber, "\(key) is not a number in \(self)", sourceLocation: sourceLocation)
        #expect(
            number.doubleValue == number.doubleValue.rounded(), "\(key) is not an integer",
            sourceLocation: sourceLocation)
        return number.int64Value
    }

    func double(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Double {
        try #require(self[key] as? NSNumber, "\(key) is not a number in \(self)", sourceLocation: sourceLocation)
            .doubleValue
    }

    func string(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(self[key] as? String, "\(key) is not a string in \(self)", sourceLocation: sourceLocation)
    }

    func object(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try #require(self[key] as? [String: Any], "\(key) is not an object in \(self)", sourceLocation: sourceLocation)
    }

    func array(_ key: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Any] {
        try #require(self[key] as? [Any], "\(key) is not an array in \(self)", sourceLocation: sourceLocation)
    }

    /// The `retrievedRange` of a fetch result.
    func retrievedRange(sourceLocation: SourceLocation = #_sourceLocation) throws -> Span {
        let range = try object("retrievedRange", sourceLocation: sourceLocation)
        return Span(
            try range.int("location", sourceLocation: sourceLocation),
            try range.int("length", sourceLocation: sourceLocation))
    }

    /// The `flags` of a fetch result.
    func flags(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        try #require(
            self["flags"] as? [String], "flags is not an array of strings in \(self)", sourceLocation: sourceLocation)
    }

    /// The domain version, checked to be a JSON string of decimal digits (§7).
    func domainVersion(sourceLocation: SourceLocation = #_sourceLocation) throws -> UInt64 {
        let text = try string("domainVersion", sourceLocation: sourceLocation)
        #expect(
            !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber },
            "domainVersion \(text) is not decimal digits",
            sourceLocation: sourceLocation)
        return try #require(UInt64(text), sourceLocation: sourceLocation)
    }
}

/// Checks the item object of §7: exactly-typed `domain`, `id`, `contentVersion`, `metadataVersion`, `size`.
@discardableResult
func expectItemObject(
    _ value: Any?, domain: String, id: String, size: Int64? = nil, contentVersion: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> (contentVersion: String, size: Int64) {
    let item = try #require(
        value as? [String: Any], "item is not an object: \(String(describing: value))", sourceLocation: sourceLocation)
    #expect(
        Set(item.keys).isSuperset(of: ["domain", "id", "contentVersion", "metadataVersion", "size"]),
        "item keys: \(item.keys.sorted())",
        sourceLocation: sourceLocation)
    #expect(try item.string("domain", sourceLocation: sourceLocation) == domain, sourceLocation: sourceLocation)
    #expect(try item.string("id", sourceLocation: sourceLocation) == id, sourceLocation: sourceLocation)
    let version = try item.string("contentVersion", sourceLocation: sourceLocation)
    let metadataVersion = try item.string("metadataVersion", sourceLocation: sourceLocation)
    #expect(
        !version.isEmpty && version.utf8.count <= 128, "D1: content version \(version)", sourceLocation: sourceLocation)
    #expect(
        metadataVersion.utf8.count <= 128, "D1: metadata version \(metadataVersion)", sourceLocation: sourceLocation)
    let itemSize = try item.int("size", sourceLocation: sourceLocation)
    if let size { #expect(itemSize == size, sourceLocation: sourceLocation) }
    if let contentVersion { #expect(version == contentVersion, sourceLocation: sourceLocation) }
    return (version, itemSize)
}

// MARK: - Errors (CONTRACT §6)

/// The §6 table, written out here so the tests do not take the engine's word for it.
let contractErrorTable: [String: (domain: String, rawValue: Int)] = [
    "noSuchItem": ("NSFileProviderErrorDomain", -1005),
    "versionNoLongerAvailable": ("NSFileProviderErrorDomain", -2009),
    "notAuthenticated": ("NSFileProviderErrorDomain", -1000),
    "serverUnreachable": ("NSFileProviderErrorDomain", -1004),
    "syncAnchorExpired": ("NSFileProviderErrorDomain", -1002),
    "pageExpired": ("NSFileProviderErrorDomain", -1002),
    "insufficientQuota": ("NSFileProviderErrorDomain", -1003),
    "noPermission": ("NSCocoaErrorDomain", 257),
    "fileExists": ("NSCocoaErrorDomain", 516),
    "userCancelled": ("NSCocoaErrorDomain", 3072),
    "featureUnsupported": ("NSCocoaErrorDomain", 3328),
    "invalidArgument": ("ChunkCacheErrorDomain", 1),
    "corruptData": ("ChunkCacheErrorDomain", 2),
    "transient": ("ChunkCacheErrorDomain", 3),
]

/// Checks a failed `--json` run against §6/§7: the exit code, one line on stderr naming `mentions`, and the
/// error object on stdout with the code's domain and raw value.
func expectError(
    _ result: CLIResult, exit: Int32, code: String, mentions: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard !result.terminatedBySignal else {
        Issue.record("crashed instead of exiting \(exit) with \(code): \(result)", sourceLocation: sourceLocation)
        return
    }
    #expect(result.exitCode == exit, "exit code: \(result)", sourceLocation: sourceLocation)
    let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(
        lines.count == 2 && lines[1].isEmpty, "stderr is not one line: \(result.stderr)", sourceLocation: sourceLocation
    )
    for mention in mentions {
        #expect(
            result.stderr.contains(mention), "stderr does not name \(mention): \(result.stderr)",
            sourceLocation: sourceLocation)
    }
    guard let object = try? parseJSONObject(result.stdout, sourceLocation: sourceLocation),
        let error = object["error"] as? [String: Any]
    else {
        Issue.record("stdout has no error object: \(result)", sourceLocation: sourceLocation)
        return
    }
    #expect(Set(object.keys) == ["error"], sourceLocation: sourceLocation)
    #expect(error["code"] as? String == code, "code: \(result)", sourceLocation: sourceLocation)
    if let expected = contractErrorTable[code] {
        #expect(error["domain"] as? String == expected.domain, "domain: \(result)", sourceLocation: sourceLocation)
        #expect(
            (error["rawValue"] as? NSNumber)?.intValue == expected.rawValue, "rawValue: \(result)",
            sourceLocation: sourceLocation)
    } else {
        Issue.record("\(code) is not a §6 code", sourceLocation: sourceLocation)
    }
    let message = error["message"] as? String ?? ""
    // stderr shows the same message on one line: newlines inside names are escaped there.
    let oneLine = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    #expect(!message.isEmpty && result.stderr.contains(oneLine), "message: \(result)", sourceLocation: sourceLocation)
}

extension Array where Element == UInt8 {
    /// The bytes of `[location, location + length)`, clamped to the array.
    func slice(_ location: Int64, _ length: Int64) -> [UInt8] {
        let lower = Int(Swift.min(Swift.max(location, 0), Int64(count)))
        let upper = Int(Swift.min(Swift.max(location + length, Int64(lower)), Int64(count)))
        return Array(self[lower..<upper])
    }
}

/// A byte range `{location, length}` as the CLI prints it.
struct Span: Hashable, Sendable, CustomStringConvertible {
    var location: Int64
    var length: Int64

    init(_ location: Int64, _ length: Int64) {
        self.location = location
        self.length = length
    }

    var end: Int64 { location + length }
    var description: String { "{\(location), \(length)}" }
}

/// The store's figures from `stat --json`, without `fileBytes`: LMDB never gives disk pages back, so the
/// data file may stay larger after a rolled-back write even though every stored figure is as before.
func storeFigures(_ store: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: String] {
    let stat = try runJSON(store, ["stat"], sourceLocation: sourceLocation)
    var figures: [String: String] = [:]
    for (key, value) in stat where key != "fileBytes" { figures[key] = "\(value)" }
    return figures
}

/// The chunk size of a default store.
let defaultChunkSize: Int64 = 64 << 10
