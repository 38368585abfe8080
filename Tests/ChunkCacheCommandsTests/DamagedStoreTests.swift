import Foundation
import SeededRandom
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A damaged store never takes down its host (CONTRACT §6): copies of a real store (several domains, items and
/// versions, a few MiB so there are overflow pages and B-trees of more than one level) are damaged at random
/// offsets of `data.mdb` — a single byte flipped in a B-tree page, a byte flipped anywhere, or a whole 4 KiB
/// page zeroed — and the real `chunkcache` binary runs `verify`, `stat`, `fetch` of the items and
/// `recover --to` on each copy. Counted and asserted:
///
/// - crashes of the calling process: every run ends with a normal exit status (0, 1 or 64), never a signal;
/// - wrong bytes served: a fetch gives the exact bytes put, or an error;
/// - the recovered store verifies clean (no corrupt chunk, damaged record or version, inconsistency) and
///   serves exactly the bytes put for every version it kept.
///
/// Also counted and printed: crashes of verify's child walk that verify reported as damage, and commands the
/// CLI's fault handler ended with a `corruptData` error (a fault inside LMDB in the calling process).
///
/// `CHUNKCACHE_DAMAGE_SEEDS` copies (20 in CI), damage drawn from `CHUNKCACHE_DAMAGE_SEED`;
/// `scripts/damage-soak.sh` runs 100 with a fresh seed. A failure names the seed and the copy.
@Suite("§6 a damaged store never takes down its host", .serialized)
struct DamagedStoreTests {
    static let copies = Int(ProcessInfo.processInfo.environment["CHUNKCACHE_DAMAGE_SEEDS"] ?? "") ?? 20
    static let seed = UInt64(ProcessInfo.processInfo.environment["CHUNKCACHE_DAMAGE_SEED"] ?? "") ?? 0xDA3A6E

    @Test(
        "recover of an undamaged store loses nothing: every domain (with its origin), item and version, byte-exact, and verify is clean"
    )
    func recoverWhole() throws {
        try withTemporaryDirectory { dir in
            let base = try DamageFixture(in: dir)
            let report = try runJSON(base.store, ["recover", "--to", dir + "/new"])
            for kind in ["domains", "items", "versions", "chunks"] {
                #expect(try report.object(kind).int("lost") == 0, "\(kind): \(report)")
            }
            #expect(try report.object("versions").int("recovered") == Int64(base.versionCount))
            #expect(try report.array("damage").isEmpty)
            try expectClean(dir + "/new")
            for (index, expected) in base.expected.enumerated() {
                let out = dir + "/out\(index)"
                _ = try runJSON(dir + "/new", expected.fetchArguments(out: out))
                #expect(try TestData.read(out, count: expected.bytes.count + 1) == expected.bytes, "\(expected)")
            }
            let old = try runJSON(base.store, ["stat"])
            let new = try runJSON(dir + "/new", ["stat"])
            for figure in ["domains", "items", "versions", "chunks", "logicalBytes", "uniqueBytes", "storedBytes"] {
                #expect(try old.int(figure) == new.int(figure), "\(figure)")
            }
            let domains = try runJSON(dir + "/new", ["domain", "ls"]).array("domains").compactMap {
                $0 as? [String: Any]
            }
            let web = try #require(domains.first { $0["name"] as? String == "web" }, "\(domains)")
            #expect("\(web)".contains("127.0.0.1:9"), "the origin setting is kept: \(web)")
            // recover never writes a store that exists, nor the damaged one.
            let again = try runCLI(["--store", base.store, "recover", "--to", dir + "/new"])
            #expect(again.exitCode == 1 && again.stderr.contains("fileExists"), "\(again)")
        }
    }

    @Test(
        "damaged copies at random offsets: no crash of the calling process, no wrong bytes, the recovered store verifies clean and serves what it kept"
    )
    func damagedCopies() throws {
        try withTemporaryDirectory { dir in
            let base = try DamageFixture(in: dir)
            let original = try Array(Data(contentsOf: URL(fileURLWithPath: base.store + "/data.mdb")))
            let treePages = DamageFixture.treePages(of: original)
            #expect(treePages.count > 10, "the store has B-tree pages to damage")
            var rng = SplitMix64(seed: Self.seed)
            var counts = DamageCounts()
            let started = Date()
            for copy in 0..<Self.copies {
                let what = "seed \(Self.seed) copy \(copy)"
                var bytes = original
                let damage: String
                switch copy % 4 {
                case 0, 1:
                    let page = treePages[Int(rng.next() % UInt64(treePages.count))]
                    let offset = page * 4096 + Int(rng.next() % 4096)
                    bytes[offset] ^= UInt8(1 + rng.next() % 255)
                    damage = "byte \(offset) flipped (B-tree page \(page))"
                case 2:
                    let offset = Int(rng.next() % UInt64(bytes.count))
                    bytes[offset] ^= UInt8(1 + rng.next() % 255)
                    damage = "byte \(offset) flipped"
                default:
                    let page = Int(rng.next() % UInt64(bytes.count / 4096))
                    bytes.replaceSubrange((page * 4096)..<(page * 4096 + 4096), with: repeatElement(0, count: 4096))
                    damage = "page \(page) zeroed"
                }
                let store = dir + "/copy\(copy)"
                try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
                try Data(bytes).write(to: URL(fileURLWithPath: store + "/data.mdb"))
                func run(_ arguments: [String]) throws -> CLIResult {
                    let result = try runCLI(["--store", store, "--json"] + arguments)
                    counts.note(result, what: "\(what) (\(damage))")
                    return result
                }

                let verify = try run(["verify"])
                if verify.exitCode == 1, verify.stderr.contains("verify's walk") {
                    counts.verifyChildCrashes += 1
                    #expect(
                        verify.stderr.contains("died of") && verify.stderr.contains("recover --to NEWSTORE"),
                        "\(verify)")
                    if counts.verifyChildCrashes == 1 {
                        print("verify of a damaged copy (\(damage)): \(verify.stderr)")
                    }
                }
                _ = try run(["stat"])
                let sample = base.sample(&rng)
                for (index, expected) in sample.enumerated() {
                    let out = store + "-out\(index)"
                    let fetch = try run(expected.fetchArguments(out: out))
                    if fetch.exitCode == 0 {
                        counts.fetchesServed += 1
                        if try TestData.read(out, count: expected.bytes.count + 1) != expected.bytes {
                            counts.wrongBytes += 1
                            Issue.record("\(what) (\(damage)): \(expected) served wrong bytes")
                        }
                        unlink(out)
                    }
                }
                let recovered = store + "-new"
                let recover = try run(["recover", "--to", recovered])
                guard recover.exitCode == 0 else {
                    #expect(
                        recover.exitCode == 1 && recover.stderr.contains("corruptData"),
                        "\(what) (\(damage)): \(recover)")
                    continue
                }
                let report = try recover.json()
                counts.versionsLost += Int(try report.object("versions").int("lost"))
                counts.chunksLost += Int(try report.object("chunks").int("lost"))
                try expectClean(recovered, what: "\(what) (\(damage))", counts: &counts)
                for (index, expected) in sample.enumerated() {
                    let out = recovered + "-out\(index)"
                    let fetch = try runCLI(["--store", recovered, "--json"] + expected.fetchArguments(out: out))
                    counts.note(fetch, what: "\(what) (\(damage)), the recovered store")
                    guard fetch.exitCode == 0 else { continue }
                    counts.recoveredServed += 1
                    if try TestData.read(out, count: expected.bytes.count + 1) != expected.bytes {
                        counts.wrongBytes += 1
                        Issue.record("\(what) (\(damage)): the recovered store served wrong bytes for \(expected)")
                    }
                    unlink(out)
                }
                try? FileManager.default.removeItem(atPath: store)
                try? FileManager.default.removeItem(atPath: recovered)
            }
            let seconds = Date().timeIntervalSince(started)
            print(
                "damaged copies: \(Self.copies) (seed \(Self.seed)) in \(String(format: "%.1f", seconds)) s; CLI runs \(counts.runs); "
                    + "crashes of the calling process \(counts.crashes); wrong bytes \(counts.wrongBytes); "
                    + "verify-child crashes detected \(counts.verifyChildCrashes); faults ended by the CLI's handler \(counts.handledFaults); "
                    + "fetches served \(counts.fetchesServed); recovered stores not clean \(counts.recoveredNotClean); "
                    + "fetches served by recovered stores \(counts.recoveredServed); versions lost \(counts.versionsLost); chunks lost \(counts.chunksLost)"
            )
            #expect(counts.crashes == 0)
            #expect(counts.abnormalExits == 0)
            #expect(counts.wrongBytes == 0)
            #expect(counts.recoveredNotClean == 0)
        }
    }

    private func expectClean(_ store: String) throws {
        var counts = DamageCounts()
        try expectClean(store, what: store, counts: &counts)
        #expect(counts.recoveredNotClean == 0)
    }

    private func expectClean(_ store: String, what: String, counts: inout DamageCounts) throws {
        let result = try runCLI(["--store", store, "--json", "verify"])
        counts.note(result, what: what + ", verify of the recovered store")
        let report = result.exitCode == 0 ? try? result.json() : nil
        let clean =
            report.map { report in
                ["corrupt", "damagedVersions", "damagedRecords", "inconsistencies"].allSatisfy {
                    ((report[$0] as? [Any]) ?? [0]).isEmpty
                }
            } ?? false
        if !clean {
            counts.recoveredNotClean += 1
            Issue.record("\(what): the recovered store does not verify clean: \(result)")
        }
    }
}

/// What the damaged-store runs count.
struct DamageCounts {
    var runs = 0
    var crashes = 0
    var abnormalExits = 0
    var wrongBytes = 0
    var verifyChildCrashes = 0
    var handledFaults = 0
    var fetchesServed = 0
    var recoveredServed = 0
    var recoveredNotClean = 0
    var versionsLost = 0
    var chunksLost = 0

    mutating func note(_ result: CLIResult, what: String) {
        runs += 1
        if result.terminatedBySignal {
            crashes += 1
            Issue.record(
                "\(what): chunkcache \(result.arguments.joined(separator: " ")) died of signal \(result.exitCode)")
        } else if ![0, 1, 64].contains(result.exitCode) {
            abnormalExits += 1
            Issue.record(
                "\(what): chunkcache \(result.arguments.joined(separator: " ")) exited \(result.exitCode): \(result)")
        }
        if result.stderr.contains("a fatal signal") { handledFaults += 1 }
    }
}

/// The store the damaged copies start from, and the bytes each of its versions holds.
struct DamageFixture {
    struct Expected: CustomStringConvertible {
        let domain: String
        let item: String
        let version: String?
        let bytes: [UInt8]

        func fetchArguments(out: String) -> [String] {
            ["fetch", "--domain", domain, item, "--out", out] + (version.map { ["--version", $0, "--strict"] } ?? [])
        }

        var description: String { "\(domain)/\(item)" + (version.map { " version \($0)" } ?? "") }
    }

    let store: String
    /// Every version of the store, with its bytes.
    let expected: [Expected]
    var versionCount: Int { expected.count }

    /// Builds the store: local puts (random bytes stored raw, text compressed, two versions sharing chunks),
    /// an imported tree of 240 small files in folders, and an origin domain without items.
    init(in dir: String) throws {
        store = dir + "/base"
        var expected: [Expected] = []
        let big = TestData.random(count: 3 << 20, seed: 11)
        var big2 = big
        big2.replaceSubrange(0..<(1 << 20), with: TestData.random(count: 1 << 20, seed: 12))
        let text = TestData.text(count: 2 << 20, seed: 13)
        let small = TestData.text(count: 20_000, seed: 14)
        for (name, bytes, version) in [
            ("big.bin", big, "v1"), ("big.bin", big2, "v2"), ("text.txt", text, "t1"), ("small", small, "s1"),
        ] {
            try TestData.write(bytes, to: dir + "/input")
            _ = try runJSON(store, ["put", "--domain", "docs", name, dir + "/input", "--version", version])
            expected.append(Expected(domain: "docs", item: name, version: version, bytes: bytes))
        }
        let tree = dir + "/tree"
        for index in 0..<240 {
            let folder = tree + "/f\(index % 12)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let bytes = TestData.text(count: 1000 + index * 37, seed: 100 + UInt64(index))
            try TestData.write(bytes, to: folder + "/file\(index).txt")
            expected.append(
                Expected(domain: "tree", item: "f\(index % 12)/file\(index).txt", version: nil, bytes: bytes))
        }
        _ = try runJSON(store, ["import", tree, "--domain", "tree", "--copy"])
        _ = try runJSON(store, ["domain", "add", "web", "--origin", "http://127.0.0.1:9/files/"])
        self.expected = expected
    }

    /// The versions a damaged copy fetches: the four put, and four imported files drawn by `rng`.
    func sample(_ rng: inout SplitMix64) -> [Expected] {
        Array(expected.prefix(4)) + (0..<4).map { _ in expected[4 + Int(rng.next() % UInt64(expected.count - 4))] }
    }

    /// The numbers of the 4 KiB pages of an LMDB file that are branch or leaf pages (their header names
    /// their own number and says so: `mp_pgno` at 0, `mp_flags` at 10, lmdb.h).
    static func treePages(of file: [UInt8]) -> [Int] {
        (2..<(file.count / 4096)).filter { page in
            let base = page * 4096
            let number = (0..<8).reduce(0) { $0 | Int(file[base + $1]) << (8 * $1) }
            let flags = Int(file[base + 10]) | Int(file[base + 11]) << 8
            return number == page && (flags & 0x7 == 1 || flags & 0x7 == 2)
        }
    }
}
