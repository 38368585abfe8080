import Foundation
import SeededRandom
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// Many readers, one writer and eviction at once, every byte checked (CONTRACT §10, §12).
///
/// 64 readers: 24 threads reading into their own buffers (the synchronous core), 32 tasks fetching hand-off
/// files, and 8 processes of the CLI; one writer putting and collecting versions of a local domain; a
/// 40 MiB bound over 80 MiB of origin files, so eviction runs all along. `CHUNKCACHE_SOAK_SECONDS` sets the
/// length (60 in CI; `scripts/soak.sh` runs 600).
@Suite(.serialized) struct SoakTests {
    static let seconds = Double(ProcessInfo.processInfo.environment["CHUNKCACHE_SOAK_SECONDS"] ?? "") ?? 60
    /// Half the origin's 80 MiB: eviction runs all along.
    static let bound: Int64 = 40 << 20
    /// How long past the deadline the readers and the writer may take to finish before the watchdog says
    /// what they wait for; the time limit ends a soak that hangs instead of the CI run.
    static let grace: TimeInterval = 120
    static let timeLimit = TimeLimitTrait.Duration.minutes(Int(seconds / 60) + 5)
    static let files = (0..<80).map { TestData.random(count: (1 << 20) + $0 * 4099, seed: UInt64(900 + $0)) }

    /// What the readers and the writer did.
    final class Tally: Sendable {
        private let counts = Mutex((reads: 0, errors: [String]()))
        func read() { counts.withLock { $0.reads += 1 } }
        func failed(_ what: String) {
            counts.withLock { if $0.errors.count < 20 { $0.errors.append(what) } else { $0.errors[19] = "… and more" } }
        }
        var reads: Int { counts.withLock { $0.reads } }
        var errors: [String] { counts.withLock { $0.errors } }
    }

    /// Prints what a soak still waits for once it is `grace` past its deadline, with the engine's work under
    /// way, so a hang says where it is.
    final class Watchdog: Sendable {
        private let state = Mutex((phase: "the readers", done: false))

        init(cache: ChunkCache, after: Date) {
            Thread.detachNewThread { [self] in
                while Date() < after {
                    if state.withLock({ $0.done }) { return }
                    Thread.sleep(forTimeInterval: 1)
                }
                guard let phase = state.withLock({ $0.done ? nil : $0.phase }) else { return }
                let work = cache.engine.origins.pendingWork.joined(separator: "; ")
                FileHandle.standardError.write(Data("soak watchdog: still waiting for \(phase); \(work)\n".utf8))
            }
        }

        func phase(_ name: String) { state.withLock { $0.phase = name } }
        func stop() { state.withLock { $0.done = true } }
    }

    /// The CLI readers: each loops over random ranges until the deadline, compares every byte with the
    /// origin's file and prints how many reads and errors it had.
    static let processReader = #"""
        import json, os, random, subprocess, sys, time
        binary, store, root, seconds, seed = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
        rng, end, reads, errors = random.Random(seed), time.time() + seconds, 0, 0
        names = sorted(os.listdir(root))
        while time.time() < end:
            name = rng.choice(names)
            data = open(os.path.join(root, name), "rb").read()
            start, length = rng.randrange(len(data)), rng.randint(1, 262144)
            try:
                r = subprocess.run([binary, "--store", store, "--json", "fetch", "--domain", "web", name, "--range", "%d:%d" % (start, length)],
                                   capture_output=True, timeout=120)
            except subprocess.TimeoutExpired:
                errors += 1; print("fetch %s %d:%d: no answer in 120 s (killed)" % (name, start, length), file=sys.stderr); continue
            if r.returncode != 0:
                errors += 1; print("fetch %s %d:%d: %s" % (name, start, length, r.stderr.decode()[:300]), file=sys.stderr); continue
            out = json.loads(r.stdout)
            location, count = out["retrievedRange"]["location"], out["retrievedRange"]["length"]
            with open(out["path"], "rb") as f:
                f.seek(location); got = f.read(count)
            os.unlink(out["path"])
            if got != data[location:location + count]:
                errors += 1; print("wrong bytes %s %d:%d" % (name, location, count), file=sys.stderr)
            reads += 1
        print(reads, errors)
        """#

    static func soak(behaviour: String?) async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            for (n, bytes) in files.enumerated() { try TestData.write(bytes, to: root + "/f\(n).bin") }
            let nginx = behaviour == nil ? try await NginxServer.start(root: URL(fileURLWithPath: root)) : nil
            let faulty = behaviour != nil ? try await FaultOrigin.start(root: URL(fileURLWithPath: root)) : nil
            defer {
                Task {
                    await nginx?.stop()
                    await faulty?.stop()
                }
            }
            let origin = nginx?.baseURL ?? faulty!.baseURL(behaviour: behaviour!)
            let cache = try await makeCache(dir, maxSize: bound)
            try await cache.setMinimumFreeSpace(0)
            _ = try await cache.addDomain("web", origin: try Origin(origin))
            let tally = Tally()
            let deadline = Date().addingTimeInterval(seconds)
            let watchdog = Watchdog(cache: cache, after: deadline.addingTimeInterval(Self.grace))
            defer { watchdog.stop() }

            // 8 processes of the CLI.
            let binary = try #require(ChunkCacheBinary.path)
            try processReader.write(toFile: dir + "/reader.py", atomically: true, encoding: .utf8)
            let processes = try (0..<8).map { n in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = [dir + "/reader.py", binary, cache.path, root, String(seconds), String(n)]
                let output = Pipe()
                let errors = Pipe()
                process.standardOutput = output
                process.standardError = errors
                try process.run()
                return (process, output, errors)
            }

            // 24 threads on the synchronous core.
            let threadsDone = DispatchGroup()
            for n in 0..<24 {
                threadsDone.enter()
                Thread.detachNewThread {
                    defer { threadsDone.leave() }
                    var rng = SplitMix64(seed: UInt64(100 + n))
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
                    defer { buffer.deallocate() }
                    while Date() < deadline {
                        let file = Int(rng.next() % UInt64(files.count))
                        let offset = Int64(rng.next() % UInt64(files[file].count))
                        let length = 1 + Int(rng.next() % UInt64(buffer.count))
                        let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
                        do {
                            let read = try cache.read(
                                ItemIdentifier(domain: "web", "f\(file).bin"), version: nil, at: offset, into: slice)
                            let expected = files[file][Int(offset)..<min(files[file].count, Int(offset) + length)]
                            if read.bytesRead != expected.count || !slice.prefix(read.bytesRead).elementsEqual(expected)
                            {
                                tally.failed("thread read f\(file) \(offset):\(length): wrong bytes")
                            }
                            tally.read()
                        } catch {
                            tally.failed("thread read f\(file) \(offset):\(length): \(error)")
                        }
                    }
                }
            }

            // One writer: versions of a local domain put and collected while the readers run.
            let writer = Task {
                var version = 0
                while Date() < deadline {
                    version += 1
                    let bytes = TestData.random(count: 256 << 10, seed: UInt64(5000 + version % 7))
                    do {
                        try await put(cache, bytes, as: ItemIdentifier(domain: "local", "doc\(version % 5)"), in: dir)
                        if version % 10 == 0 { _ = try await cache.collectGarbage(keepVersions: 2) }
                    } catch {
                        tally.failed("writer: \(error)")
                    }
                }
            }

            // 32 tasks fetching hand-off files.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<32 {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(200 + n))
                        while Date() < deadline {
                            let file = Int(rng.next() % UInt64(files.count))
                            let offset = Int64(rng.next() % UInt64(files[file].count))
                            let length = 1 + Int64(rng.next() % (256 << 10))
                            do {
                                let result = try await cache.fetchPartialContents(
                                    for: ItemIdentifier(domain: "web", "f\(file).bin"), version: nil,
                                    minimalRange: ByteRange(location: offset, length: length), aligningTo: 4096)
                                let range = result.retrievedRange
                                let got = try TestData.read(
                                    result.url.path, offset: range.location, count: Int(range.length))
                                unlink(result.url.path)
                                if got != Array(files[file][Int(range.location)..<Int(range.end)]) {
                                    tally.failed("task fetch f\(file) \(range): wrong bytes")
                                }
                                tally.read()
                            } catch {
                                tally.failed("task fetch f\(file) \(offset):\(length): \(error)")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            watchdog.phase("the writer's last put")
            await writer.value
            watchdog.phase("the reader threads")
            await withCheckedContinuation { continuation in
                threadsDone.notify(queue: .global()) { continuation.resume() }
            }
            watchdog.phase("the CLI processes")
            var processReads = 0
            for (process, output, errors) in processes {
                process.waitUntilExit()
                let counts = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    .split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
                let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                #expect(
                    process.terminationStatus == 0 && counts.count == 2 && counts[1] == 0,
                    "a CLI reader: \(counts) \(stderr.prefix(600))")
                processReads += counts.first ?? 0
            }
            watchdog.phase("the downloads behind the reads")
            await cache.waitForDownloads()
            watchdog.phase("the checks")
            try await cache.flushUsage()
            print(
                "soak (\(behaviour ?? "nginx")): \(tally.reads) reads in the process, \(processReads) by CLI processes, \(seconds) s"
            )
            #expect(tally.errors.isEmpty, "\(tally.errors)")
            #expect(tally.reads > 100 && processReads > 8, "the readers ran: \(tally.reads), \(processReads)")
            let stats = try await cache.statistics()
            #expect(stats.evictedBytes > 0, "eviction ran along")
            let size = try FileManager.default.attributesOfItem(atPath: cache.path + "/data.mdb")[.size] as! Int64
            #expect(size <= bound, "data.mdb within its bound: \(size)")
            let report = try await cache.verify()
            #expect(
                report.corrupt.isEmpty && report.damagedRecords.isEmpty && report.damagedVersions.isEmpty
                    && report.inconsistencies.isEmpty,
                "\(report.inconsistencies)")
        }
    }

    @Test(
        "soak: 64 readers (24 threads, 32 tasks, 8 CLI processes), one writer and eviction against nginx; every byte checked, 0 errors",
        .requires(NginxServer.self), .timeLimit(timeLimit))
    func soakAgainstNginx() async throws {
        try await Self.soak(behaviour: nil)
    }

    @Test(
        "soak: the same against an origin that fails 5 % of requests (503 or a reset mid-body); retries hide every failure",
        .requires(FaultOrigin.self), .timeLimit(timeLimit))
    func soakAgainstFlakyOrigin() async throws {
        try await Self.soak(behaviour: "flaky-5")
    }
}
