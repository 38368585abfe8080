import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// Learned prefetch (CONTRACT §15): traces learned from the reads a program makes after it opens a file, kept in
/// the store, shared between stores, and the prefetches they start, against a real nginx origin.
@Suite("Traces")
struct TraceTests {
    /// The origin's files: a program's first file, two more it reads whole, one it never reads, and a database
    /// it reads two places of.
    static let files: [String: [UInt8]] = [
        "app/main.py": TestData.text(count: 3000, seed: 1), "app/a.py": TestData.text(count: 9000, seed: 2),
        "app/b.py": TestData.text(count: 5000, seed: 3), "app/unread.py": TestData.text(count: 7000, seed: 4),
        "data/big.db": TestData.random(count: 2 << 20, seed: 5),
    ]
    static let chunk: Int64 = 65536

    /// A program's start: opens `main.py`, reads it, `a.py` and `b.py` whole, then 64 KiB of the database at
    /// 64 KiB and 4 KiB at 1 MiB.
    static let program: [(item: String, offset: Int64, count: Int)] = [
        ("app/main.py", 0, 3000), ("app/a.py", 0, 9000), ("app/b.py", 0, 5000), ("data/big.db", 65536, 65536),
        ("data/big.db", 1 << 20, 4096),
    ]

    /// The origin (nginx over a folder of ``files``) and two stores, each with domain `web` on it, synced: a
    /// trace learned in the first is brought into the second.
    static func withStores(
        _ body: (_ first: ChunkCache, _ second: ChunkCache, _ server: NginxServer, _ root: String) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            for folder in ["app", "data"] {
                try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            }
            for (path, bytes) in files { try TestData.write(bytes, to: root + "/" + path) }
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            defer { Task { await server.stop() } }
            var caches: [ChunkCache] = []
            for name in ["first", "second"] {
                try FileManager.default.createDirectory(atPath: dir + "/" + name, withIntermediateDirectories: true)
                let cache = try await makeCache(dir + "/" + name)
                cache.settleInBackground(false)
                _ = try await cache.addDomain("web", origin: try Origin(server.baseURL))
                _ = try await cache.syncDomain("web")
                caches.append(cache)
            }
            try await server.clearAccessLog()
            try await body(caches[0], caches[1], server, root)
        }
    }

    /// Runs `reads` as a program `opener` would through a mount: each item opened (noted) before its first read,
    /// each read noted; returns the bytes read.
    @discardableResult
    static func run(
        _ cache: ChunkCache, as opener: TraceOpener, _ reads: [(item: String, offset: Int64, count: Int)]
    ) async throws -> [[UInt8]] {
        var opened: Set<String> = []
        var results: [[UInt8]] = []
        for read in reads {
            let item = ItemIdentifier(domain: "web", read.item)
            if opened.insert(read.item).inserted { cache.noteOpen(item, by: opener) }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: read.count, alignment: 16)
            defer { buffer.deallocate() }
            let result = try await cache.read(item, version: nil, at: read.offset, into: buffer)
            cache.noteRead(item, range: ByteRange(location: read.offset, length: Int64(read.count)), by: opener)
            results.append(Array(buffer[0..<result.bytesRead]))
        }
        return results
    }

    /// The bytes `reads` should return from `files`.
    static func expected(_ reads: [(item: String, offset: Int64, count: Int)], in files: [String: [UInt8]] = files)
        -> [[UInt8]]
    {
        reads.map { Array(files[$0.item]![Int($0.offset)..<Int($0.offset) + $0.count]) }
    }

    /// Waits until the origin has answered `count` requests (a prefetch under way in the background).
    static func requests(_ server: NginxServer, atLeast count: Int) async throws -> [AccessLogEntry] {
        try await server.accessLog(atLeast: count, timeout: .seconds(20))
    }

    @Test("§15: a trace is recorded, exported, imported into another store, and predicts the second run's reads")
    func learnExportImportPredict() async throws {
        try await Self.withStores { first, second, server, _ in
            #expect(try await Self.run(first, as: TraceOpener("one"), Self.program) == Self.expected(Self.program))
            await first.finishTraceSessions()
            let learned = try await first.traces(in: "web")
            #expect(learned.count == 1 && learned.first?.leader == "app/main.py" && learned.first?.items == 4)
            // Each file whole, 64 KiB and 4 KiB of the database.
            let described: Int64 = 3000 + 9000 + 5000 + 65536 + 4096
            #expect(learned.first?.describedBytes == described)
            #expect(try await second.traces(in: "web").isEmpty)

            #expect(try await second.importTraces(try await first.exportTraces(of: "web"), into: "web") == 1)
            #expect(try await second.traces(in: "web").map(\.items) == [4])
            try await server.clearAccessLog()
            // The program opens its first file: the trace's items are asked for at once, one request each (the
            // database's two extents, 896 KiB apart, are two ranges of one), before the program reads anything
            // else.
            second.noteOpen(ItemIdentifier(domain: "web", "app/main.py"), by: TraceOpener("two"))
            let prefetched = try await Self.requests(server, atLeast: 4)
            #expect(
                Set(prefetched.map(\.uri)) == ["/app/main.py", "/app/a.py", "/app/b.py", "/data/big.db"]
                    && prefetched.count == 4, "\(prefetched)")
            let database = prefetched.first { $0.uri == "/data/big.db" }
            #expect(database?.range == "bytes=65536-131071,1048576-1114111", "\(prefetched)")
            try await server.clearAccessLog()
            // The second run reads what the first did and asks the origin nothing.
            #expect(try await Self.run(second, as: TraceOpener("two"), Self.program) == Self.expected(Self.program))
            await second.finishTraceSessions()
            #expect(try await server.accessLog().isEmpty)
            let stats = try await second.statistics()
            // Prefetched: the three files and two whole chunks of the database; read of those: all but 60 KiB of
            // the second chunk.
            #expect(stats.traces == 1)
            #expect(stats.prefetchedBytes == 3000 + 9000 + 5000 + 2 * Self.chunk)
            #expect(stats.prefetchHitBytes == 3000 + 9000 + 5000 + Self.chunk + 4096)
        }
    }

    @Test(
        "§15 §10: a trace of scattered pages is prefetched in one request of many ranges: the chunks under the pages and no byte between them"
    )
    func scatteredPagesOneRequest() async throws {
        try await Self.withStores { first, second, server, _ in
            // A database reader: 4 KiB in every other chunk of the 2 MiB file, 16 pages.
            let pages: [(item: String, offset: Int64, count: Int)] = stride(from: 0, to: 32, by: 2).map {
                ("data/big.db", Int64($0) * Self.chunk + 8192, 4096)
            }
            #expect(try await Self.run(first, as: TraceOpener("one"), pages) == Self.expected(pages))
            await first.finishTraceSessions()
            _ = try await second.importTraces(try await first.exportTraces(of: "web"), into: "web")
            try await server.clearAccessLog()
            second.noteOpen(ItemIdentifier(domain: "web", "data/big.db"), by: TraceOpener("two"))
            let asked = try await Self.requests(server, atLeast: 1)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await server.accessLog().count == 1, "one request for the 16 pages: \(asked)")
            let ranges = stride(from: 0, to: 32, by: 2).map {
                "\(Int64($0) * Self.chunk)-\(Int64($0 + 1) * Self.chunk - 1)"
            }
            #expect(asked.first?.range == "bytes=" + ranges.joined(separator: ","), "\(asked)")
            #expect(asked.first?.status == 206)
            try await server.clearAccessLog()
            #expect(try await Self.run(second, as: TraceOpener("two"), pages) == Self.expected(pages))
            await second.finishTraceSessions()
            #expect(try await server.accessLog().isEmpty, "the run reads only what the prefetch brought")
            let stats = try await second.statistics()
            #expect(stats.prefetchedBytes == 16 * Self.chunk, "the 16 chunks and nothing between them")
            #expect(stats.prefetchHitBytes == 16 * 4096)
        }
    }

    @Test(
        "§15: tracePredicts says which items the opener's trace names, once its lookup is done; no run, no prediction")
    func predictsWhatTheTraceNames() async throws {
        try await Self.withStores { first, second, _, _ in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            _ = try await second.importTraces(try await first.exportTraces(of: "web"), into: "web")
            let opener = TraceOpener("two")
            let item = { ItemIdentifier(domain: "web", $0) }
            #expect(await second.tracePredicts(item("app/a.py"), by: opener) == false, "no run yet")
            second.noteOpen(item("app/main.py"), by: opener)
            for name in ["app/main.py", "app/a.py", "app/b.py", "data/big.db"] {
                #expect(await second.tracePredicts(item(name), by: opener), "\(name) is in the trace")
            }
            #expect(await second.tracePredicts(item("app/unread.py"), by: opener) == false)
            #expect(await second.tracePredicts(item("app/a.py"), by: TraceOpener("three")) == false)
            await second.finishTraceSessions()
            #expect(await second.tracePredicts(item("app/a.py"), by: opener) == false, "the run ended")
        }
    }

    @Test("§15: a random 4 KiB reader with no trace costs one request, and its run becomes a trace")
    func noTraceOneRequest() async throws {
        try await Self.withStores { first, _, server, _ in
            let read: [(item: String, offset: Int64, count: Int)] = [("data/big.db", 1_500_000, 4096)]
            #expect(try await Self.run(first, as: TraceOpener("lone"), read) == Self.expected(read))
            await first.finishTraceSessions()
            #expect(try await server.accessLog().count == 1)
            let stats = try await first.statistics()
            #expect(stats.traces == 1 && stats.prefetchedBytes == 0 && stats.prefetchHitBytes == 0)
        }
    }

    @Test("§15: a wrong trace (files replaced or gone at the origin) costs at most its bytes, never a wrong byte")
    func wrongTrace() async throws {
        try await Self.withStores { first, second, server, root in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            let exported = try await first.exportTraces(of: "web")
            // At the origin: a.py rewritten shorter, b.py removed; the second store learns of both.
            var files = Self.files
            files["app/a.py"] = TestData.text(count: 4000, seed: 9)
            try TestData.write(files["app/a.py"]!, to: root + "/app/a.py")
            try FileManager.default.removeItem(atPath: root + "/app/b.py")
            _ = try await second.syncDomain("web")
            _ = try await second.importTraces(exported, into: "web")
            try await server.clearAccessLog()
            let reads = Self.program.filter { $0.item != "app/b.py" && $0.item != "app/a.py" } + [("app/a.py", 0, 4000)]
            second.noteOpen(ItemIdentifier(domain: "web", "app/main.py"), by: TraceOpener("two"))
            _ = try await Self.requests(server, atLeast: 3)
            await second.waitForDownloads()
            #expect(try await Self.run(second, as: TraceOpener("two"), reads) == Self.expected(reads, in: files))
            await second.finishTraceSessions()
            // Nothing is asked for b.py, a.py's new bytes once, the database's two extents in one request, and
            // the reads asked nothing more.
            let log = try await server.accessLog()
            #expect(
                !log.contains { $0.uri == "/app/b.py" } && log.filter { $0.uri == "/app/a.py" }.count == 1, "\(log)")
            #expect(log.count == 3, "\(log)")
            // b.py left the trace with its item.
            #expect(try await second.traces(in: "web").first?.items == 3)
        }
    }

    @Test("§15: an item a trace predicts and two runs in a row do not read leaves it; a trace unused for 30 days goes")
    func tracesAgeOut() async throws {
        try await Self.withStores { first, _, _, _ in
            let opener = TraceOpener("one")
            try await Self.run(first, as: opener, Self.program)
            await first.finishTraceSessions()
            let withoutB = Self.program.filter { $0.item != "app/b.py" }
            try await Self.run(first, as: opener, withoutB)
            await first.finishTraceSessions()
            #expect(try await first.traces(in: "web").first?.items == 4, "one miss: b.py stays")
            try await Self.run(first, as: opener, withoutB)
            await first.finishTraceSessions()
            let after = try await first.traces(in: "web")
            #expect(after.first?.items == 3 && after.first?.runs == 3 && after.first?.uses == 2, "\(after)")

            // A trace last used 31 days ago goes when the domain next learns a new one.
            let old = TraceRecord(
                leader: "app/unread.py",
                members: [.init(item: "app/unread.py", extents: [.init(offset: 0, length: 7000)])],
                usedAt: Date().timeIntervalSince1970 - 31 * 86_400)
            try await first.store.writer.write { txn in try txn.saveTrace(old, in: "web", first.store.dbs) }
            #expect(try await first.traces(in: "web").count == 2)
            try await Self.run(first, as: TraceOpener("other"), [("app/b.py", 0, 100)])
            await first.finishTraceSessions()
            #expect(Set(try await first.traces(in: "web").map(\.leader)) == ["app/main.py", "app/b.py"])
        }
    }

    @Test("§15: a trace learned on one version maps onto the next by offset")
    func mapsOntoNextVersion() async throws {
        try await Self.withStores { first, second, server, root in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            var files = Self.files
            files["data/big.db"] = TestData.random(count: 2 << 20, seed: 6)
            try TestData.write(files["data/big.db"]!, to: root + "/data/big.db")
            _ = try await second.syncDomain("web")
            _ = try await second.importTraces(try await first.exportTraces(of: "web"), into: "web")
            try await server.clearAccessLog()
            second.noteOpen(ItemIdentifier(domain: "web", "app/main.py"), by: TraceOpener("two"))
            let log = try await Self.requests(server, atLeast: 4)
            // The first version's two extents of the database, of the new version: one request of both ranges.
            let ranges = log.filter { $0.uri == "/data/big.db" }.map(\.range)
            #expect(ranges == ["bytes=65536-131071,1048576-1114111"], "\(log)")
            await second.waitForDownloads()
            try await server.clearAccessLog()
            #expect(
                try await Self.run(second, as: TraceOpener("two"), Self.program)
                    == Self.expected(Self.program, in: files))
            await second.finishTraceSessions()
            #expect(try await server.accessLog().isEmpty)
        }
    }

    @Test("§15: the library's first fetch of an item with a trace prefetches the rest of what it predicts")
    func firstFetchPrefetches() async throws {
        try await Self.withStores { first, second, server, _ in
            let item = ItemIdentifier(domain: "web", "data/big.db")
            for offset: Int64 in [0, 1 << 20, 1_900_000] {
                let fetched = try await first.fetchPartialContents(
                    for: item, version: nil, minimalRange: ByteRange(location: offset, length: 1000), aligningTo: 4096)
                try? FileManager.default.removeItem(at: fetched.url)
            }
            await first.finishTraceSessions()
            await first.waitForDownloads()
            #expect(try await first.traces(in: "web").map(\.leader) == ["data/big.db"])
            _ = try await second.importTraces(try await first.exportTraces(of: "web"), into: "web")
            try await server.clearAccessLog()
            let fetched = try await second.fetchPartialContents(
                for: item, version: nil, minimalRange: ByteRange(location: 0, length: 1000), aligningTo: 4096)
            try? FileManager.default.removeItem(at: fetched.url)
            await second.finishTraceSessions()
            await second.waitForDownloads()
            let before = try await server.accessLog().count
            // The two later ranges were prefetched with the first: fetching them asks the origin nothing.
            for offset: Int64 in [1 << 20, 1_900_000] {
                let later = try await second.fetchPartialContents(
                    for: item, version: nil, minimalRange: ByteRange(location: offset, length: 1000), aligningTo: 4096)
                #expect(
                    try readRange(later.url.path, later.retrievedRange)
                        == Array(
                            Self.files["data/big.db"]![
                                Int(later.retrievedRange.location)..<Int(later.retrievedRange.end)]))
                try? FileManager.default.removeItem(at: later.url)
            }
            #expect(try await server.accessLog().count == before && before >= 2)
        }
    }

    @Test("§15: with learned prefetch off a domain learns nothing and prefetches nothing, and keeps its traces")
    func switchedOff() async throws {
        try await Self.withStores { first, second, server, _ in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            _ = try await second.importTraces(try await first.exportTraces(of: "web"), into: "web")
            try await second.setLearnedPrefetch(false, for: "web")
            #expect(try await second.learnedPrefetch(for: "web") == false)
            try await server.clearAccessLog()
            let reads = [Self.program[0]]
            try await Self.run(second, as: TraceOpener("two"), reads)
            await second.finishTraceSessions()
            #expect(try await server.accessLog().count == 1, "main.py only")
            let traces = try await second.traces(in: "web")
            #expect(traces.count == 1 && traces.first?.items == 4 && traces.first?.runs == 1)
            try await second.setLearnedPrefetch(true, for: "web")
            #expect(try await second.learnedPrefetch(for: "web"))
        }
    }

    @Test("§15 §11: removing a domain removes its traces and its switch: the domain made again starts with neither")
    func removedWithItsDomain() async throws {
        try await Self.withStores { first, _, server, _ in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            try await first.setLearnedPrefetch(false, for: "web")
            #expect(try await first.traces(in: "web").count == 1)
            try await first.removeDomain("web")
            _ = try await first.addDomain("web", origin: try Origin(server.baseURL))
            #expect(try await first.traces(in: "web").isEmpty)
            #expect(try await first.learnedPrefetch(for: "web"))
            #expect(try await first.statistics().traces == 0)
        }
    }

    @Test("§15: a bad trace file is refused with what is wrong, and nothing of it is taken in")
    func badImports() async throws {
        try await Self.withStores { first, second, _, _ in
            try await Self.run(first, as: TraceOpener("one"), Self.program)
            await first.finishTraceSessions()
            let good = String(decoding: try await first.exportTraces(of: "web"), as: UTF8.self)
            let cases: [(String, String)] = [
                ("not json", "not a trace file"),
                (good.replacingOccurrences(of: "chunkcache-traces", with: "other"), "this chunkcache reads"),
                (good.replacingOccurrences(of: "[65536,65536]", with: "[65536,-1]"), "extent"),
                (good.replacingOccurrences(of: "\"app/a.py\"", with: "\"\""), "item identifier"),
            ]
            for (text, says) in cases {
                let error = await #expect(throws: CacheError.self) {
                    try await second.importTraces(Data(text.utf8), into: "web")
                }
                #expect(
                    error?.code == .invalidArgument && error?.message.contains(says) == true,
                    "\(String(describing: error))")
            }
            #expect(try await second.traces(in: "web").isEmpty)
            _ = try await second.addDomain("local")
            let local = await #expect(throws: CacheError.self) {
                try await second.importTraces(Data(good.utf8), into: "local")
            }
            #expect(local?.message.contains("has no origin") == true)
            #expect(try await second.removeTraces(of: "web") == 0)
            #expect(try await first.removeTraces(of: "web", leaders: ["app/main.py"]) == 1)
            #expect(try await first.traces(in: "web").isEmpty)
        }
    }
}
