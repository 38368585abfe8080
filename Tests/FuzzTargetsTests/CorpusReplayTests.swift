import Foundation
import FuzzTargets
import Testing

/// The fuzzing, as CI runs it: every input the fuzzer kept (`Fuzz/corpus/TARGET/`, seeds and what
/// `scripts/fuzz.sh` found) replays through its target without a broken invariant, a crash or a hang; and the
/// inputs behind the bugs fuzzing found stay fixed.
@Suite struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus").standardized.path

    static func inputs(of target: FuzzTarget) -> [String] {
        let folder = corpus + "/" + target.name
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().map { folder + "/" + $0 }
    }

    @Test(
        "every decoder of outside bytes has a target with a saved corpus, and every input replays clean within a second",
        arguments: FuzzTarget.all.map(\.name))
    func replay(_ name: String) throws {
        let target = try #require(FuzzTarget.named(name))
        let inputs = Self.inputs(of: target)
        #expect(inputs.count >= 5, "Fuzz/corpus/\(name) holds \(inputs.count) inputs; run scripts/fuzz.sh to grow it")
        for input in inputs {
            let bytes = try #require(FileManager.default.contents(atPath: input))
            let clock = ContinuousClock()
            let started = clock.now
            let problem = bytes.withUnsafeBytes { target.check($0) }
            #expect(problem == nil, "\(input): \(problem ?? "")")
            #expect(clock.now - started < .seconds(1), "\(input) took \(clock.now - started): a hang in the making")
        }
    }

    /// An input that broke its target's invariant (or crashed it) before the fix of what it found.
    struct FixedBug: Sendable, CustomTestStringConvertible {
        let target: String
        let input: [UInt8]
        var testDescription: String { target }
    }

    static let fixedBugs: [FixedBug] = {
        let nginx =
            #"[{"name":".","type":"directory"},{"name":"..","type":"directory"},{"name":"a/b","type":"file","size":1},"#
            + #"{"name":"n","type":"file","size":-5},{"name":"h","type":"file","size":1e30}]"#
        let s3 = "<Contents><Key>k</Key><Size>-1</Size></Contents><Contents><Key></Key><Size>1</Size></Contents>"
        var pageToken: [UInt8] = [0xB1] + [UInt8](repeating: 7, count: 24) + [1] + [UInt8](repeating: 0, count: 8)
        pageToken += [0xD0, 0x01] + [UInt8](repeating: 9, count: 464)  // a position of 464 bytes: 508 with the seal
        let negativePage: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1] + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]
        return [
            FixedBug(target: "duration", input: Array("1e308d".utf8)),
            FixedBug(target: "nginx-listing", input: Array(nginx.utf8)),
            FixedBug(target: "s3-listing", input: Array(s3.utf8)),
            FixedBug(target: "response-headers", input: Array("ETag: \nx-amz-version-id: null".utf8)),
            FixedBug(target: "sync-tokens", input: pageToken),
            FixedBug(target: "records", input: negativePage),
            // Foundation's DateFormatter traps on this mtime (a combining mark after the seconds) on Linux.
            FixedBug(
                target: "nginx-listing",
                input: Array(
                    #"[{"name":"a","type":"file","size":1,"mtime":"Wed, 25 Nov 2026 02:27:5\#u{0359}GMT"}]"#.utf8)),
            FixedBug(
                target: "s3-listing",
                input: Array(
                    "<Contents><Key>k</Key><Size>1</Size><LastModified>2026-11-25T02:27:5\u{0359}Z</LastModified></Contents>"
                        .utf8)),
        ]
    }()

    @Test(
        "inputs behind fixed bugs: a duration past Double's range, listing entries named '.' or with negative sizes, an empty ETag, a page token past 500 bytes (F1), a manifest key with a negative page, a listing date Foundation traps on",
        arguments: fixedBugs)
    func fixedBug(_ bug: FixedBug) throws {
        let target = try #require(FuzzTarget.named(bug.target))
        #expect(bug.input.withUnsafeBytes { target.check($0) } == nil)
    }
}
