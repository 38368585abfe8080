import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `fetch --out` killed with SIGKILL while it writes: nothing stays beside the destination for ever.
///
/// The CLI's test hook (`CHUNKCACHE_TEST_STAGING_FIFO`) writes the staging file's path to a FIFO once the
/// file exists and then stops the process; the test reads that line (the event), kills the process, and
/// looks at the folder.
@Suite("kill -9 during fetch --out")
struct FetchOutKillTests {
    /// The process ended, or ran 60 s, without writing to the FIFO.
    struct HookNotReached: Error {
        let arguments: [String]
    }

    /// A started `chunkcache` that stopped itself at the hook, and the line it wrote.
    struct Stopped {
        let process: Process
        let staging: String
    }

    /// Runs `chunkcache arguments` with the hook on, and waits (up to 60 s) for its line on the FIFO.
    static func runUntilStaged(_ arguments: [String], fifo: String, namedStaging: Bool) throws -> Stopped {
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opened before the child starts and without blocking, so neither side waits for the other to open.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ChunkCacheBinary.path))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["CHUNKCACHE_STORE"] = nil
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["CHUNKCACHE_TEST_STAGING_FIFO"] = fifo
        environment["CHUNKCACHE_TEST_NAMED_STAGING"] = namedStaging ? "1" : nil
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line: [UInt8] = []
        while line.last != UInt8(ascii: "\n") {
            var poller = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 60_000) == 1 else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw HookNotReached(arguments: arguments)
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(reader, &buffer, buffer.count)
            try #require(n > 0, "the FIFO closed before a whole line")
            line += buffer[..<n]
        }
        return Stopped(process: process, staging: String(decoding: line.dropLast(), as: UTF8.self))
    }

    static func kill9(_ stopped: Stopped) {
        kill(stopped.process.processIdentifier, SIGKILL)
        stopped.process.waitUntilExit()
        #expect(stopped.process.terminationReason == .uncaughtSignal)
        #expect(stopped.process.terminationStatus == SIGKILL)
    }

    static func entries(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    /// A store holding 4 MiB of random bytes (no zero chunks) as d/big, and an empty destination folder.
    static func makeStore(in dir: String) throws -> (store: String, content: [UInt8]) {
        let store = dir + "/store"
        let content = TestData.random(count: 4 << 20, seed: 71)
        try TestData.write(content, to: dir + "/big")
        try runJSON(store, ["put", "--domain", "d", "big", dir + "/big"])
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
        return (store, content)
    }

    @Test("kill -9 during fetch --out leaves nothing beside the destination: the file has no name until complete (O_TMPFILE)")
    func unnamedStagingLeavesNothing() throws {
        try withTemporaryDirectory { dir in
            let (store, _) = try Self.makeStore(in: dir)
            let stopped = try Self.runUntilStaged(
                ["--store", store, "fetch", "--domain", "d", "big", "--out", dir + "/out/big"], fifo: dir + "/fifo", namedStaging: false)
            #expect(stopped.staging == "unnamed", "the temp directory's filesystem has O_TMPFILE")
            #expect(try Self.entries(dir + "/out") == [], "while it writes, the folder shows nothing")
            Self.kill9(stopped)
            #expect(try Self.entries(dir + "/out") == [])
        }
    }

    @Test("kill -9 during fetch --out with a named staging file: the next --out into the folder sweeps it")
    func namedStagingIsSweptByTheNextFetch() throws {
        try withTemporaryDirectory { dir in
            let (store, content) = try Self.makeStore(in: dir)
            let stopped = try Self.runUntilStaged(
                ["--store", store, "fetch", "--domain", "d", "big", "--out", dir + "/out/big"], fifo: dir + "/fifo", namedStaging: true)
            let name = URL(fileURLWithPath: stopped.staging).lastPathComponent
            #expect(stopped.staging == dir + "/out/" + name && name.hasPrefix(".chunkcache-"))
            Self.kill9(stopped)
            #expect(try Self.entries(dir + "/out") == [name], "the killed writer's file is still there")

            let result = try runCLI(["--store", store, "--json", "fetch", "--domain", "d", "big", "--out", dir + "/out/again"],
                                    env: ["CHUNKCACHE_TEST_NAMED_STAGING": "1"])
            #expect(result.exitCode == 0, "\(result)")
            #expect(try Self.entries(dir + "/out") == ["again"], "the abandoned staging file was swept")
            #expect(try TestData.read(dir + "/out/again", count: content.count + 1) == content)
        }
    }
}
