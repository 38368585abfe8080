import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Crash at any point (``CrashAtAnyPointTests``' harness) of the two halves of CONTRACT §10's "served as it
/// arrives, stored behind": the real `chunkcache` is killed with SIGKILL while a cold `fetch --out` streams
/// its download into fills left unsettled (`CHUNKCACHE_SETTLE=off`), and while `chunkcache settle` settles
/// them. After each kill, the next `chunkcache settle` settles everything (no fill record, counted byte or
/// fill file is left, none is dropped as mismatched or lost), `verify` is clean, and every item reads byte-exact
/// against the origin: 0 wrong bytes. A settle frees a batch's fill bytes only once the batch has committed, so
/// a kill during its commit leaves every fill of the batch to settle again.
@Suite("Crash at any point: streaming and settling", .serialized)
struct SettleCrashTests {
    /// The fetch leaves its fills for the next settler.
    static let unsettled: [String: String?] = ["CHUNKCACHE_SETTLE": "off"]

    @Test(
        "kill -9 during a cold fetch --out whose downloads stay unsettled, at random moments: the next settle leaves nothing unsettled and no fill file, verify is clean, every item reads byte-exact against the origin (§6, §10)",
        .requires(NginxServer.self))
    func killedColdStreams() async throws {
        try await withTemporaryDirectory { dir in
            let harness = CrashHarness("stream", in: dir)
            var remote = ["a.bin": CrashContent.mixed(count: 12 << 20, seed: harness.draw())]
            let out = dir + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try await harness.withOriginStore(remote) { baseBytes in
                let duration = try harness.timed(
                    ["fetch", "--domain", "web", "a.bin", "--out", out + "/warmup"], environment: Self.unsettled)
                unlink(out + "/warmup")
                try harness.expectAllSettledByTheNextSettle()
                let base = CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)

                for round in 0..<CrashRun.kills {
                    harness.round = round
                    // Even rounds download fills whose hash the store knows (evicted chunks), odd ones fills of a
                    // file it never saw.
                    let name: String
                    if round % 2 == 0 {
                        name = "a.bin"
                        try harness.run(["evict", "--domain", "web"])
                    } else {
                        name = "n\(round).bin"
                        remote[name] = CrashContent.mixed(count: 12 << 20, seed: harness.draw())
                        try TestData.write(remote[name]!, to: dir + "/origin/" + name)
                    }
                    let destination = out + "/r\(round)"
                    let result = try harness.killAtRandom(
                        ["fetch", "--domain", "web", name, "--out", destination], within: duration,
                        environment: Self.unsettled)
                    if FileManager.default.fileExists(atPath: destination) {
                        #expect(
                            try TestData.read(destination, count: remote[name]!.count + 1) == remote[name]!,
                            "a named destination holds the origin's bytes \(harness.context)")
                    } else {
                        #expect(
                            result.terminatedBySignal, "a fetch --out that exited 0 left its file \(harness.context)")
                    }
                    unlink(destination)
                    // Fills recorded before the kill: the kill landed inside the stream, after its first commits.
                    if result.terminatedBySignal, try harness.run(["stat"]).int("unsettledChunks") > 0 {
                        harness.noteHalfway()
                    }

                    try harness.expectAllSettledByTheNextSettle()
                    try harness.expectReads(
                        [base] + remote.map { CrashHarness.Expected(domain: "web", item: $0.key, bytes: $0.value) })
                    try harness.expectNoTemporaryFiles()
                }
                harness.expectSomeKillsLanded()
            }
        }
    }

    @Test(
        "kill -9 during settle at random moments: the next settle leaves nothing unsettled and no fill file, none dropped, verify is clean, every item reads byte-exact against the origin (§6, §10)",
        .requires(NginxServer.self))
    func killedSettles() async throws {
        try await withTemporaryDirectory { dir in
            let harness = CrashHarness("settle", in: dir)
            let remote = [
                "a.bin": CrashContent.mixed(count: 12 << 20, seed: harness.draw()),
                "b.bin": CrashContent.text(count: (4 << 20) + 777, seed: harness.draw()),
            ]
            let out = dir + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try await harness.withOriginStore(remote) { baseBytes in
                let expected =
                    [CrashHarness.Expected(domain: "d", item: "base", version: "v1", bytes: baseBytes)]
                    + remote.map { CrashHarness.Expected(domain: "web", item: $0.key, bytes: $0.value) }
                /// Downloads every origin item again, into fills left unsettled.
                func downloadUnsettled() throws {
                    try harness.run(["evict", "--domain", "web"])
                    for name in remote.keys.sorted() {
                        try harness.run(
                            ["fetch", "--domain", "web", name, "--out", out + "/" + name, "--force"],
                            environment: Self.unsettled)
                        unlink(out + "/" + name)
                    }
                    #expect(
                        try harness.run(["stat"]).int("unsettledChunks") > 0,
                        "the downloads wait to be settled, so kills land in settling \(harness.context)")
                }
                try downloadUnsettled()
                let duration = try harness.timed(["settle"])

                for round in 0..<CrashRun.kills {
                    harness.round = round
                    try downloadUnsettled()
                    let before = try harness.run(["stat"]).int("unsettledChunks")
                    let result = try harness.killAtRandom(["settle"], within: duration)
                    let left = try harness.run(["stat"]).int("unsettledChunks")
                    if !result.terminatedBySignal {
                        #expect(left == 0, "a settle that exited 0 settled everything \(harness.context)")
                    } else if left == 0 {
                        harness.noteCommitted(result)
                    } else if left < before {
                        harness.noteHalfway()  // killed between two batches' commits
                    }
                    try harness.expectAllSettledByTheNextSettle()
                    try harness.expectReads(expected)
                    try harness.expectNoTemporaryFiles()
                }
                harness.expectSomeKillsLanded()
            }
        }
    }
}

extension CrashHarness {
    /// `chunkcache settle` (in a new process) settles whatever a killed process left: it drops nothing (the
    /// origin's bytes did not change, and no fill's bytes may be lost to a process's death, only to a system
    /// crash); then nothing is unsettled, no fill file is left in `fills/`, and the store verifies clean.
    func expectAllSettledByTheNextSettle(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let settled = try run(["settle"], sourceLocation: sourceLocation)
        #expect(
            try settled.int("mismatched") == 0, "settling after the kill dropped nothing as mismatched \(context)",
            sourceLocation: sourceLocation)
        #expect(
            try settled.int("lost") == 0, "no fill's bytes are lost to a killed process \(context): \(settled)",
            sourceLocation: sourceLocation)
        let stat = try run(["stat"], sourceLocation: sourceLocation)
        #expect(
            try stat.int("unsettledChunks") == 0 && stat.int("unsettledBytes") == 0 && stat.int("fillBytes") == 0,
            "nothing is left unsettled \(context): \(stat)", sourceLocation: sourceLocation)
        let fills = ((try? FileManager.default.contentsOfDirectory(atPath: store + "/fills")) ?? []).filter {
            !$0.hasPrefix(".")
        }
        #expect(fills.isEmpty, "no fill file is left \(context): \(fills)", sourceLocation: sourceLocation)
        try expectStoreClean(sourceLocation: sourceLocation)
    }
}
