import Foundation
import TestSupport
import Testing

/// `chunkcache fetch` of an origin domain, process after process, against nginx on 127.0.0.1 (CONTRACT §10).
@Suite(.serialized) struct ColdFetchCommandTests {
    /// A store directory (not yet made) and an nginx on 127.0.0.1 serving `movie.bin` with `bytes`; the
    /// server stops when `body` ends.
    static func withMovie(_ bytes: [UInt8], _ body: (_ store: String, NginxServer) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try TestData.write(bytes, to: root + "/movie.bin")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            do {
                try await body(dir + "/store", server)
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }

    @Test(
        "§10: fetch --json reports downloadedBytes and requests; another process finds the chunks in the store and asks nothing",
        .requires(NginxServer.self))
    func downloadedAcrossProcesses() async throws {
        let bytes = TestData.random(count: 3 << 20, seed: 41)
        try await Self.withMovie(bytes) { store, server in
            try runJSON(store, ["domain", "add", "web", "--origin", server.baseURL])
            let first = try runJSON(store, ["fetch", "--domain", "web", "movie.bin", "--range", "1048576:100000"])
            #expect(try first.int("downloadedBytes") == 131_072 && first.int("requests") == 1)
            let path = try first.string("path")
            #expect(try TestData.read(path, offset: 1_048_576, count: 100_000) == Array(bytes[1_048_576..<1_148_576]))
            let second = try runJSON(store, ["fetch", "--domain", "web", "movie.bin", "--range", "1048576:100000"])
            #expect(try second.int("downloadedBytes") == 0 && second.int("requests") == 0)
            let whole = try runJSON(store, ["fetch", "--domain", "web", "movie.bin"])
            #expect(try whole.int("downloadedBytes") == (3 << 20) - 131_072, "only what the store lacked")
            #expect(try TestData.read(try whole.string("path"), count: 3 << 20) == bytes)
            let log = try await server.accessLog(atLeast: 2)
            #expect(log.filter { $0.method == "GET" }.count == 1 + (try whole.int("requests")))
        }
    }

    @Test(
        "§10 stored behind: a fetch command ends once its output is complete and leaves a settler behind it, which settles what it downloaded; with CHUNKCACHE_SETTLE=off the downloads stay fills",
        .requires(NginxServer.self))
    func settlerLeftBehind() async throws {
        let bytes = TestData.random(count: 3 << 20, seed: 43)
        try await Self.withMovie(bytes) { store, server in
            try runJSON(store, ["domain", "add", "web", "--origin", server.baseURL])
            let out = (store as NSString).deletingLastPathComponent + "/movie.out"
            let fetch = ["--store", store, "--json", "fetch", "--domain", "web", "movie.bin"]
            let left = try runCLI(fetch + ["--out", out], env: ["CHUNKCACHE_SETTLE": nil])
            #expect(left.exitCode == 0, "\(left)")
            #expect(try TestData.read(out, count: bytes.count + 1) == bytes)
            var stats = try runJSON(store, ["stat"])
            let deadline = Date().addingTimeInterval(20)
            while try stats.int("unsettledChunks") > 0 && Date() < deadline {
                try await Task.sleep(for: .milliseconds(100))
                stats = try runJSON(store, ["stat"])
            }
            #expect(try stats.int("unsettledChunks") == 0 && stats.int("fillBytes") == 0, "\(stats)")
            #expect(try stats.int("chunks") == 48 && stats.int("uniqueBytes") == 3 << 20, "settled: \(stats)")
            // Off: nothing settles behind the command.
            try runJSON(store, ["evict", "--domain", "web", "movie.bin"])
            let kept = try runCLI(fetch + ["--out", out, "--force"], env: ["CHUNKCACHE_SETTLE": "off"])
            #expect(kept.exitCode == 0, "\(kept)")
            try await Task.sleep(for: .seconds(1))
            stats = try runJSON(store, ["stat"])
            #expect(try stats.int("unsettledChunks") == 48 && stats.int("unsettledBytes") == 3 << 20, "\(stats)")
            #expect(try runJSON(store, ["settle"]).int("settled") == 48)
            let report = try runJSON(store, ["verify"])
            #expect(try report.int("repaired") == 0 && (report["corrupt"] as? [Any])?.isEmpty == true, "\(report)")
        }
    }

    @Test(
        "§10 A19: read-ahead continues across processes: 48 sequential 64 KiB fetch commands make a handful of GETs, not 48",
        .requires(NginxServer.self))
    func readAheadAcrossProcesses() async throws {
        let bytes = TestData.random(count: 8 << 20, seed: 42)
        try await Self.withMovie(bytes) { store, server in
            try runJSON(store, ["domain", "add", "web", "--origin", server.baseURL, "--read-ahead", "1MiB"])
            for i in 0..<48 {
                let offset = i * 65_536
                let result = try runJSON(
                    store, ["fetch", "--domain", "web", "movie.bin", "--range", "\(offset):65536"])
                #expect(
                    try TestData.read(try result.string("path"), offset: Int64(offset), count: 65_536)
                        == Array(bytes[offset..<(offset + 65_536)]))
            }
            let gets = try await server.accessLog().filter { $0.method == "GET" }
            // A window that starts at 256 KiB and doubles to 1 MiB, topped up at half: ~8 requests for 3 MiB.
            #expect(gets.count <= 12, "\(gets.map(\.range))")
            // A random reader is not mistaken for a sequential one: a far range downloads only itself.
            let far = try runJSON(store, ["fetch", "--domain", "web", "movie.bin", "--range", "\(6 << 20):65536"])
            #expect(try far.int("downloadedBytes") == 65_536)
        }
    }

    @Test(
        "§10: fetch --out of a whole cold 64 MiB file of a domain-synced item is byte-exact, asks no HEAD, makes 8 GETs of 8 MiB at --pipeline-depth 4, keeps peak RSS under 150 MiB; verify is clean",
        .requires(NginxServer.self))
    func wholeFetchOutStreams() async throws {
        let bytes = TestData.random(count: 64 << 20, seed: 2005)
        try await Self.withMovie(bytes) { store, server in
            try runJSON(store, ["domain", "add", "web", "--origin", server.baseURL, "--pipeline-depth", "4"])
            try runJSON(store, ["domain", "sync", "web"])
            let dir = URL(fileURLWithPath: store).deletingLastPathComponent().path
            let out = dir + "/movie.out"
            let rss = dir + "/rss"
            // GNU time reports the child's peak RSS (getrusage of its own child, not of this test process).
            let timed = Process()
            timed.executableURL = URL(fileURLWithPath: "/usr/bin/time")
            timed.arguments =
                ["-f", "%M", "-o", rss, try #require(ChunkCacheBinary.path)]
                + ["--store", store, "--json", "fetch", "--domain", "web", "movie.bin", "--out", out]
            let stdout = Pipe()
            timed.standardOutput = stdout
            try timed.run()
            let printed = stdout.fileHandleForReading.readDataToEndOfFile()
            timed.waitUntilExit()
            try #require(timed.terminationStatus == 0)
            let result = try parseJSONObject(String(decoding: printed, as: UTF8.self))
            #expect(try result.int("downloadedBytes") == 64 << 20 && result.int("requests") == 8)
            #expect(try TestData.read(out, count: 64 << 20) == bytes)
            let peakKiB = try #require(
                Int(try String(contentsOfFile: rss, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(peakKiB < 150 << 10, "peak RSS \(peakKiB) KiB")
            let log = try await server.accessLog(atLeast: 9).filter { $0.uri.hasSuffix("movie.bin") }
            #expect(log.count == 8 && log.allSatisfy { $0.method == "GET" && $0.range != nil }, "\(log)")
            // In parallel: nginx logs each as it ends, in any order.
            let expected = (0..<8).map { "bytes=\($0 << 23)-\((($0 + 1) << 23) - 1)" }
            #expect(Set(log.compactMap(\.range)) == Set(expected))
            let verify = try runJSON(store, ["verify"])
            #expect((verify["corrupt"] as? [Any])?.isEmpty == true)
        }
    }
}
