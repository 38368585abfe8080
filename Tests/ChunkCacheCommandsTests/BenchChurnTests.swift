import Foundation
import TestSupport
import Testing

/// `chunkcache-bench churn` (the churn measurement) in its smoke form against nginx on 127.0.0.1: the
/// JSON it promises, a store that never passed its bound, eviction at work, and nothing left behind.
@Suite("chunkcache-bench churn", .serialized)
struct BenchChurnTests {
    func entries(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
    }

    @Test(
        "churn --json, 64 MiB bound × 3 cycles: every cycle's fill counted, data.mdb and the live pages within the bound, eviction in the later cycles",
        .requires(NginxServer.self))
    func smokeJSON() async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            let scratch = dir + "/scratch"
            for path in [root, scratch] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            }
            // Something of the server's own in its root: the command removes only what it wrote.
            try TestData.write(Array("keep".utf8), to: root + "/other.txt")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            let result: CLIResult
            do {
                result = try CLIProcess(
                    [
                        "--json", "churn", "--origin", server.baseURL, "--origin-dir", root, "--scratch", scratch,
                        "--bound", "64MiB", "--cycles", "3", "--quiet-samples", "200",
                    ], executable: try #require(ChunkCacheBinary.benchPath)
                ).wait(timeout: 300)
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            #expect(result.stderr.isEmpty, "a progress line or message on a non-terminal stderr: \(result.stderr)")
            let json = try result.json()
            #expect(
                Set(json.keys) == [
                    "origin", "bound", "cycles", "chunkSize", "cycleBytes", "itemSize", "itemsPerCycle", "parallel",
                    "pinnedSize",
                    "probeRangeSize", "probeIntervalMillis", "seed", "quiet", "cycleResults", "duringEviction", "goals",
                    "originThroughputLastToFirst", "errors",
                ])
            let bound: Int64 = 64 << 20
            #expect(try json.int("bound") == bound)
            #expect(try json.int("cycles") == 3)
            #expect(try json.int("chunkSize") == 64 << 10)
            let cycleBytes = try json.int("cycleBytes")
            #expect(cycleBytes == bound * 5 / 4)
            // An eighth of a cycle, in whole 64 KiB: 10 MiB.
            #expect(try json.int("itemSize") == 10 << 20 && json.int("itemsPerCycle") == 8)
            let latencyKeys: Set<String> = ["p50Micros", "p90Micros", "p99Micros", "samples"]
            for key in ["quiet", "duringEviction"] {
                let summary = try json.object(key)
                #expect(Set(summary.keys) == latencyKeys, "\(key): \(summary.keys.sorted())")
                #expect(try summary.int("samples") > 0, "\(key)")
                let p50 = try summary.double("p50Micros")
                let p99 = try summary.double("p99Micros")
                #expect(p50 > 0 && p50 <= p99, "\(key): \(p50) \(p99)")
            }
            #expect(try json.object("quiet").int("samples") == 200)

            let cycles = try #require(try json.array("cycleResults") as? [[String: Any]])
            try #require(cycles.count == 3)
            var evicted: Int64 = 0
            var failed: Int64 = 0
            for (index, cycle) in cycles.enumerated() {
                #expect(
                    Set(cycle.keys) == [
                        "cycle", "items", "failed", "downloadedBytes", "originBytes", "seconds", "throughputMBps",
                        "originThroughputMBps", "dataFileBytes", "liveBytes",
                        "maxLiveBytes", "evictedBytes", "probe",
                    ])
                #expect(try cycle.int("cycle") == Int64(index + 1))
                // Failed fetches are counted, not fatal: on this engine some whole-file fetches give up under
                // churn (Benchmarks/RESULTS.md, the churn run of 2026-11-25), which the goals then show.
                #expect(try cycle.int("items") + cycle.int("failed") == 8, "\(cycle)")
                failed += try cycle.int("failed")
                // Every cycle's bytes are new (seeded per cycle): all of them come from the origin, at least once.
                #expect(try cycle.int("originBytes") >= cycleBytes, "\(cycle)")
                #expect(try cycle.int("downloadedBytes") <= cycle.int("originBytes"), "\(cycle)")
                #expect(try cycle.double("seconds") > 0 && cycle.double("originThroughputMBps") > 0)
                // The map size is the bound: no write can take data.mdb, or its live pages, past it.
                let dataFile = try cycle.int("dataFileBytes")
                let live = try cycle.int("liveBytes")
                let maxLive = try cycle.int("maxLiveBytes")
                #expect(dataFile > 0 && dataFile <= bound, "\(cycle)")
                #expect(live > 0 && live <= maxLive && maxLive <= bound, "\(cycle)")
                #expect(Set(try cycle.object("probe").keys) == latencyKeys)
                evicted += try cycle.int("evictedBytes")
            }
            // 1.25 × the bound per cycle cannot stay: from the second cycle on, each evicts.
            #expect(try cycles[1].int("evictedBytes") > 0 && cycles[2].int("evictedBytes") > 0, "\(cycles)")
            #expect(evicted >= 2 * cycleBytes - bound, "evicted \(evicted)")

            let goals = try json.object("goals")
            #expect(Set(goals.keys) == ["dataFileToBound", "throughputLastToFirst", "p99DuringToQuiet"])
            for key in goals.keys {
                #expect(Set(try goals.object(key).keys) == ["value", "limit", "met"], "\(key)")
            }
            let dataFileGoal = try goals.object("dataFileToBound")
            #expect(try dataFileGoal.double("value") <= 1.0 && dataFileGoal["met"] as? Bool == true)
            #expect(Int64(try json.array("errors").count) == min(10, failed))
            // The scratch store is gone, and only the server's own file is left in its root.
            #expect(entries(scratch).isEmpty, "left in the scratch directory: \(entries(scratch))")
            #expect(entries(root) == ["other.txt"], "\(entries(root))")
        }
    }

    @Test("churn checks its options before it does anything: a bound under 16 MiB, no --origin-dir")
    func usage() throws {
        try withTemporaryDirectory { dir in
            let bad = try runBench([
                "churn", "--origin", "http://127.0.0.1:9/", "--origin-dir", dir, "--bound", "1MiB",
            ])
            #expect(bad.exitCode == 64 && bad.stderr.contains("--bound"), "\(bad)")
            let missing = try runBench([
                "churn", "--origin", "http://127.0.0.1:9/", "--origin-dir", dir + "/none", "--scratch", dir,
            ])
            #expect(missing.exitCode == 64 && missing.stderr.contains("--origin-dir"), "\(missing)")
            #expect(entries(dir).isEmpty, "\(entries(dir))")
        }
    }
}
