import FileIO
import Foundation
import TestSupport
import Testing

@testable import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

/// A fetch to a path (`fetch --out`) killed with SIGKILL while it writes: nothing stays beside the
/// destination for ever.
///
/// The fetch runs in a child process (an exit test) whose store is opened with a ``DestinationFaults`` hook
/// (``EngineProbes/destination``): once the
/// destination's file exists, the hook writes the child's pid and the staging path (or `unnamed`) to a FIFO
/// and holds the fetch there. The parent reads that line, looks at the folder, kills the child and looks
/// again. No environment variable reaches the engine.
@Suite("kill -9 during a fetch to a path", .serialized)
struct FetchOutKillTests {
    /// The child wrote no line within 60 s.
    struct HookNotReached: Error {}

    /// The child's side: opens `store` with the hook injected, then fetches d/big of it to `target`. The hook
    /// holds the fetch until the parent kills the process.
    static func fetchUntilKilled(store: String, target: String, fifo: String, namedStaging: Bool) async throws {
        let faults = DestinationFaults(namedStaging: namedStaging) { staging in
            if let writer = try? FileDescriptor.open(fifo, O_WRONLY) {
                _ = try? Array("\(getpid()) \(staging ?? "unnamed")\n".utf8).withUnsafeBytes {
                    try writer.writeAll($0)
                }
                try? writer.close()
            }
            while true { pause() }  // until SIGKILL
        }
        let cache = try await openCache(store, probes: EngineProbes(destination: faults))
        _ = try await cache.fetchContents(
            for: ItemIdentifier(domain: "d", "big"), destination: .clone(to: target, replaceExisting: false))
    }

    /// What the parent saw while the child was held: the staging path the hook reported (`unnamed` for an
    /// `O_TMPFILE`) and the destination folder's entries.
    struct Held {
        let staging: String
        let listing: [String]
    }

    /// Fetches d/big of `store` to `target` in a child process with the hook on; once the child is held, lists
    /// `folder`, then kills the child with SIGKILL.
    static func killDuringFetch(
        store: String, target: String, folder: String, fifo: String, namedStaging: Bool
    ) async throws -> Held {
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opened before the child starts and without blocking, so neither side waits for the other to open.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(reader >= 0)
        defer { close(reader) }
        let child = Task {
            await #expect(processExitsWith: .signal(SIGKILL)) {
                [
                    store = store as String, target = target as String, fifo = fifo as String,
                    namedStaging = namedStaging as Bool
                ] in
                try await FetchOutKillTests.fetchUntilKilled(
                    store: store, target: target, fifo: fifo, namedStaging: namedStaging)
            }
        }
        // The parent's side (read the child's line, look, kill) runs on a thread of its own and needs no task:
        // while an exit test's child lives, Swift Testing may hold a thread of the pool waiting for it, and two
        // of these tests on two cores left no thread for anything until a child ended.
        let held = await onThreadOfItsOwn { try holdThenKill(reader: reader, folder: folder) }
        await child.value
        return try held.get()
    }

    /// Reads the child's line (its pid and staging path) from the FIFO, lists `folder`, kills the child.
    private static func holdThenKill(reader: Int32, folder: String) throws -> Held {
        var line: [UInt8] = []
        while line.last != UInt8(ascii: "\n") {
            var poller = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 60_000) == 1 else { throw HookNotReached() }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(reader, &buffer, buffer.count)
            if n > 0 { line += buffer[..<n] } else { usleep(1000) }  // 0: the writer has not opened it yet
        }
        let fields = String(decoding: line.dropLast(), as: UTF8.self).split(separator: " ", maxSplits: 1).map(
            String.init)
        guard let pid = fields.first.flatMap({ pid_t($0) }) else { throw HookNotReached() }
        defer { kill(pid, SIGKILL) }
        return Held(staging: fields.count == 2 ? fields[1] : "", listing: try entries(folder))
    }

    static func entries(_ directory: String) throws -> [String] {
        var names: [String] = []
        try FileSystem.forEachEntry(in: directory) { names.append($0.name) }
        return names.sorted()
    }

    /// A store holding 4 MiB of random bytes (no zero chunks) as d/big, and an empty destination folder.
    static func makeStore(in dir: String) async throws -> (store: String, content: [UInt8]) {
        let content = TestData.random(count: 4 << 20, seed: 71)
        let cache = try await makeCache(dir)
        try await put(cache, content, as: ItemIdentifier(domain: "d", "big"), in: dir)
        try FileSystem.makeDirectory(dir + "/out", mode: 0o755)
        return (dir + "/store", content)
    }

    @Test(
        "kill -9 during a fetch to a path leaves nothing beside the destination: the file has no name until complete (O_TMPFILE); the fault point is injected, not read from the environment"
    )
    func unnamedStagingLeavesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let (store, _) = try await Self.makeStore(in: dir)
            let held = try await Self.killDuringFetch(
                store: store, target: dir + "/out/big", folder: dir + "/out", fifo: dir + "/fifo", namedStaging: false)
            #expect(held.staging == "unnamed", "the temp directory's filesystem has O_TMPFILE")
            #expect(held.listing == [], "while it writes, the folder shows nothing")
            #expect(try Self.entries(dir + "/out") == [])
        }
    }

    @Test(
        "kill -9 during a fetch to a path with a named staging file: the next fetch into the folder sweeps it; the fault point is injected, not read from the environment"
    )
    func namedStagingIsSweptByTheNextFetch() async throws {
        try await withTemporaryDirectory { dir in
            let (store, content) = try await Self.makeStore(in: dir)
            let held = try await Self.killDuringFetch(
                store: store, target: dir + "/out/big", folder: dir + "/out", fifo: dir + "/fifo", namedStaging: true)
            let name = URL(fileURLWithPath: held.staging).lastPathComponent
            #expect(held.staging == dir + "/out/" + name && name.hasPrefix(".chunkcache-"))
            #expect(held.listing == [name], "while it writes, the named staging file is in the folder")
            #expect(try Self.entries(dir + "/out") == [name], "the killed writer's file is still there")

            // The next fetch into the folder, named too (sweeps happen where a named file is made).
            let again = dir + "/out/again"
            await #expect(processExitsWith: .success) { [store = store as String, again = again as String] in
                let cache = try await openCache(
                    store, probes: EngineProbes(destination: DestinationFaults(namedStaging: true)))
                _ = try await cache.fetchContents(
                    for: ItemIdentifier(domain: "d", "big"), destination: .clone(to: again, replaceExisting: false))
            }
            #expect(try Self.entries(dir + "/out") == ["again"], "the abandoned staging file was swept")
            #expect(try TestData.read(again, count: content.count + 1) == content)
        }
    }

    @Test(
        "Test hooks are not environment variables: with CHUNKCACHE_TEST_NAMED_STAGING=1 set, a fetch to a path still makes no named staging file"
    )
    func environmentDoesNotSteerTheEngine() async throws {
        try await withTemporaryDirectory { dir in
            try FileSystem.makeDirectory(dir + "/scratch", mode: 0o700)
            let target = dir + "/file"
            // In a child process: the variable is set before the engine could first look at it.
            await #expect(processExitsWith: .success) { [dir = dir as String, target = target as String] in
                setenv("CHUNKCACHE_TEST_NAMED_STAGING", "1", 1)
                var named = true
                _ = try Destination(path: target, replaceExisting: false).write(
                    size: 10, scratch: dir + "/scratch", strategies: Set(CloneStrategy.allCases),
                    faults: EngineProbes.none.destination, inspect: nil
                ) { _ in
                    named = try FetchOutKillTests.entries(dir).contains { $0.hasPrefix(".chunkcache-") }
                    return .complete
                }
                exit(named ? 1 : 0)
            }
        }
    }
}
