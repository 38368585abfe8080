import Foundation
import TestSupport
import Testing

/// `chunkcache-bench deltas` (CONTRACT §14): the model of what a version series takes stored with and
/// without deltas, on a series whose figures are known in advance.
@Suite("§14 chunkcache-bench deltas")
struct BenchDeltasTests {
    /// A 1 MiB random version, and the same with 300 bytes inserted at 100,000: every chunk after the first is new.
    func series(in dir: String) throws -> (String, String) {
        let v1 = TestData.random(count: 1 << 20, seed: 51)
        let v2 = Array(v1[..<100_000]) + TestData.random(count: 300, seed: 52) + Array(v1[100_000...])
        try TestData.write(v1, to: dir + "/v1.bin")
        try TestData.write(v2, to: dir + "/v2.bin")
        return (dir + "/v1.bin", dir + "/v2.bin")
    }

    @Test("§14: chunkcache-bench deltas --json: an insertion that shifts a version costs deltas of a few hundred bytes")
    func insertionSeriesJSON() throws {
        try withTemporaryDirectory { dir in
            let (v1, v2) = try series(in: dir)
            let result = try runBench(["--json", "deltas", v1, v2])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
            let json = try result.json()
            #expect(
                Set(json.keys) == [
                    "chunkSize", "level", "deltaLevel", "blockSize", "minSaving", "alignedBases", "versions", "totals",
                ])
            let versions = try #require(try json.array("versions") as? [[String: Any]])
            try #require(versions.count == 2)
            #expect(try versions[1].int("newChunks") == 16)
            #expect(try versions[1].int("deltaChunks") == 15)
            let totals = try json.object("totals")
            #expect(try totals.int("logicalBytes") == (2 << 20) + 300)
            // Random bytes are stored raw: 16 chunks of v1, then 15 chunks and 300 bytes of v2.
            #expect(try totals.int("todayBytes") == 31 * 65_536 + 300)
            let deltaBytes = try totals.int("deltaBytes")
            #expect(deltaBytes > (1 << 20) + 300 && deltaBytes < (1 << 20) + 300 + 15 * 2048, "\(deltaBytes)")
            #expect(try totals.int("basesAtSameOffset") == 1, "the chunk holding the insertion")
            #expect(try totals.int("basesShifted") == 14)
            #expect(try totals.int("noBase") == 1, "the last 300 bytes, shorter than a block")
            #expect(try totals.int("basesRejected") == 0)
            #expect(try totals.double("deltaCPUMillisPerMiB") > 0)
        }
    }

    @Test(
        "§14: chunkcache-bench deltas --aligned-bases: bases of two whole chunks still hold every shifted chunk's bytes"
    )
    func alignedBases() throws {
        try withTemporaryDirectory { dir in
            let (v1, v2) = try series(in: dir)
            let json = try runBench(["--json", "deltas", v1, v2, "--aligned-bases"]).json()
            #expect(json["alignedBases"] as? Bool == true)
            let totals = try json.object("totals")
            #expect(try totals.int("deltaChunks") == 15)
            let deltaBytes = try totals.int("deltaBytes")
            #expect(deltaBytes > (1 << 20) + 300 && deltaBytes < (1 << 20) + 300 + 15 * 2048, "\(deltaBytes)")
        }
    }

    @Test("§14: chunkcache-bench deltas prints a table, and takes no block size outside 64 bytes to the chunk size")
    func textAndBadInput() throws {
        try withTemporaryDirectory { dir in
            let (v1, v2) = try series(in: dir)
            let result = try runBench(["deltas", v1, v2, "--chunk-size", "16KiB"])
            try #require(result.exitCode == 0, "\(result)")
            #expect(result.stdout.contains("stored with deltas:"), "\(result.stdout)")
            #expect(result.stdout.contains("16 KiB chunks"), "\(result.stdout)")
            for bad in [
                ["--block-size", "32"], ["--block-size", "32KiB", "--chunk-size", "16KiB"], ["--min-saving", "1"],
            ] {
                let refused = try runBench(["deltas", v1, v2] + bad)
                #expect(refused.exitCode == 64, "\(bad): \(refused)")
            }
        }
    }
}
