import ChunkCache
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("§2 §7 verify and damaged chunks")
struct VerifyTests {
    /// Flips one byte inside every copy of `chunk`'s raw bytes in the store's data file; returns how many copies.
    /// Random chunks do not compress, so the store keeps them raw and their bytes can be found as they are.
    func damage(_ chunk: [UInt8], inStore store: String) throws -> Int {
        try flipEvery(Data(chunk.prefix(256)), at: 1000, with: 0x5A, inStore: store)
    }

    /// XORs the byte `offset` bytes into every copy of `needle` in the store's data file with `mask`, as a disk
    /// error would; returns how many copies it changed.
    func flipEvery(_ needle: Data, at offset: Int, with mask: UInt8, inStore store: String) throws -> Int {
        let path = store + "/data.mdb"
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        var found = 0
        var searchFrom = data.startIndex
        while let hit = data.range(of: needle, in: searchFrom..<data.endIndex) {
            data[hit.lowerBound + offset] ^= mask
            found += 1
            searchFrom = hit.upperBound
        }
        try TestData.write(Array(data), to: path)
        return found
    }

    @Test(
        "§2 a damaged chunk is never served: fetch is corruptData, verify names its SHA-256, --repair makes it absent")
    func damagedChunk() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let v1 = TestData.random(count: 1 << 20, seed: 141)
            var v2 = v1
            v2.replaceSubrange(3 * 65536..<4 * 65536, with: TestData.random(count: 65536, seed: 142))
            try TestData.write(v1, to: dir + "/v1")
            try TestData.write(v2, to: dir + "/v2")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/v1", "--version", "v1"])
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/v2", "--version", "v2"])
            let badChunk = Array(v1[3 * 65536..<4 * 65536])
            let digest = badChunk.withUnsafeBytes { ChunkDigest(hashing: $0) }.description
            try #require(try damage(badChunk, inStore: store) >= 1, "the raw chunk is in data.mdb")

            let report = try runJSON(store, ["verify"])
            #expect(try report.int("chunksChecked") == 17)
            #expect(report["corrupt"] as? [String] == [digest], "§7: corrupt lists the bad chunk's lowercase hex hash")
            #expect(try report.int("repaired") == 0)

            // Never served: a read that needs the chunk fails its check.
            for range in [[], ["--range", "\(3 * 65536 + 5):10"]] {
                let result = try runCLI(
                    ["--store", store, "--json", "fetch", "--domain", "d", "doc", "--version", "v1", "--strict"] + range
                )
                expectError(result, exit: 1, code: "corruptData", mentions: [])
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: store + "/tmp") == [],
                "a failed fetch leaves no temp file")
            // Ranges that do not need it still work.
            let clean = try runJSON(
                store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--strict", "--range", "0:100"])
            try expectFetchRules(clean, content: v1, start: 0, length: 100, alignment: 4096)

            let repair = try runJSON(store, ["verify", "--repair"])
            #expect(repair["corrupt"] as? [String] == [digest])
            #expect(try repair.int("repaired") == 1)
            let after = try runJSON(store, ["verify"])
            #expect(try after.int("chunksChecked") == 16)
            #expect(try after.array("corrupt").isEmpty)
            #expect(try runJSON(store, ["stat"]).int("chunks") == 16)

            // §7: strict → versionNoLongerAvailable; non-strict → the newest version that can serve the range.
            let strict = try runCLI([
                "--store", store, "--json", "fetch", "--domain", "d", "doc", "--version", "v1", "--strict",
                "--range", "\(3 * 65536):10",
            ])
            expectError(strict, exit: 1, code: "versionNoLongerAvailable", mentions: ["v1"])
            let fallback = try runJSON(
                store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--range", "\(3 * 65536):10"])
            try expectItemObject(fallback["item"], domain: "d", id: "doc", size: 1 << 20, contentVersion: "v2")
            try expectFetchRules(fallback, content: v2, start: 3 * 65536, length: 10, alignment: 4096)
            let stillV1 = try runJSON(
                store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--strict", "--range", "0:10"])
            try expectItemObject(stillV1["item"], domain: "d", id: "doc", contentVersion: "v1")

            let versions = try #require(
                try runJSON(store, ["versions", "--domain", "d", "doc"])["versions"] as? [[String: Any]])
            #expect(try versions.map { try $0.string("contentVersion") } == ["v2", "v1"])
            #expect(try versions.map { try $0.int("cachedBytes") } == [1 << 20, (1 << 20) - 65536])
        }
    }

    /// Changes the tag of every manifest entry naming `chunk` from "stored" (1) to "zero" (2) in the store's data
    /// file, as a disk error would; returns how many copies it changed.
    func damageManifestEntry(naming chunk: [UInt8], inStore store: String) throws -> Int {
        let hex = Array(chunk.withUnsafeBytes { ChunkDigest(hashing: $0) }.description.utf8)
        let digest = stride(from: 0, to: hex.count, by: 2).map {
            UInt8(String(decoding: hex[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
        return try flipEvery(Data([1] + digest), at: 0, with: 0x03, inStore: store)
    }

    @Test(
        "a damaged manifest page is never served as zeros: fetch is corruptData naming the item; verify names it and exits 0"
    )
    func damagedManifestPage() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let doc = TestData.random(count: 4 * 65536, seed: 151)
            let other = TestData.random(count: 65536, seed: 152)
            try TestData.write(doc, to: dir + "/doc")
            try TestData.write(other, to: dir + "/other")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/doc", "--version", "v1"])
            try runJSON(store, ["put", "--domain", "d", "other", dir + "/other", "--version", "v1"])
            try #require(try damageManifestEntry(naming: Array(doc[2 * 65536..<3 * 65536]), inStore: store) >= 1)

            let fetch = try runCLI(["--store", store, "--json", "fetch", "--domain", "d", "doc"])
            expectError(
                fetch, exit: 1, code: "corruptData",
                mentions: [
                    "page 0 of the manifest of version \"v1\" of item \"doc\" in domain \"d\"", "chunkcache verify",
                ])
            let intact = try runJSON(store, ["fetch", "--domain", "d", "other"])
            try expectFetchRules(intact, content: other, start: 0, length: 65536, alignment: 1)

            let report = try runJSON(store, ["verify"])
            #expect(try report.int("chunksChecked") == 5)
            #expect(try report.array("corrupt").isEmpty)
            let versions = try #require(report["damagedVersions"] as? [[String: Any]])
            #expect(versions.count == 1)
            #expect(try versions.first?.string("domain") == "d")
            #expect(try versions.first?.string("item") == "doc")
            #expect(try versions.first?.string("contentVersion") == "v1")
            #expect(try versions.first?.string("problem") == "page 0 of its manifest fails its check")
            #expect(
                report["damagedRecords"] as? [String] == [
                    "page 0 of the manifest of version \"v1\" of item \"doc\" in domain \"d\""
                ])
        }
    }

    /// A store whose domain "web" has an nginx origin serving `a.bin` (4 chunks), and the commands run on it with
    /// nothing settled: what the fetches download stays a fill.
    struct FillStore {
        let dir: String
        let bytes = TestData.random(count: 4 * 65536, seed: 2703)
        var store: String { dir + "/store" }

        func run(_ arguments: [String], in store: String? = nil) throws -> [String: Any] {
            let result = try runCLI(
                ["--store", store ?? self.store, "--json"] + arguments, env: ["CHUNKCACHE_SETTLE": "off"])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            return try result.json()
        }

        /// Fetches all of `a.bin` into a file, expects its bytes, and returns how many came from the origin.
        func fetch(in store: String? = nil) throws -> Int64 {
            let out = dir + "/out-\(UUID().uuidString)"
            let fetched = try run(["fetch", "--domain", "web", "a.bin", "--out", out], in: store)
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: out))) == bytes)
            return try fetched.int("downloadedBytes")
        }

        static func with(_ body: (FillStore) async throws -> Void) async throws {
            try await withTemporaryDirectory { dir in
                let fills = FillStore(dir: dir)
                try FileManager.default.createDirectory(atPath: dir + "/origin", withIntermediateDirectories: true)
                try TestData.write(fills.bytes, to: dir + "/origin/a.bin")
                let server = try await NginxServer.start(root: URL(fileURLWithPath: dir + "/origin"))
                defer { Task { await server.stop() } }
                _ = try fills.run(["domain", "add", "web", "--origin", server.baseURL])
                #expect(try fills.fetch() == Int64(fills.bytes.count))
                try await body(fills)
            }
        }
    }

    @Test(
        "§10 verify checks downloads not settled yet: a fill whose bytes changed is listed in corruptFills, --repair makes it absent, the next fetch downloads it",
        .requires(NginxServer.self))
    func damagedFill() async throws {
        try await FillStore.with { fills in
            let store = fills.store
            let bytes = fills.bytes
            let clean = try fills.run(["verify"])
            #expect(try clean.int("fillsChecked") == 4 && clean.int("chunksChecked") == 0)
            #expect(clean["corruptFills"] as? [String] == [])

            let files = try FileManager.default.contentsOfDirectory(atPath: store + "/fills").filter {
                !$0.hasPrefix(".")
            }
            let fill = try #require(files.first)
            let handle = try #require(FileHandle(forUpdatingAtPath: store + "/fills/" + fill))
            try handle.seek(toOffset: 65536 + 77)
            try handle.write(contentsOf: [bytes[65536 + 77] ^ 0xFF])
            try handle.close()
            let report = try fills.run(["verify"])
            let corrupt = try #require(report["corruptFills"] as? [String], "\(report)")
            #expect(corrupt.count == 1 && corrupt.first?.hasPrefix("fill 1 of the manifest of version") == true)
            #expect(try report.array("corrupt").isEmpty && report.array("inconsistencies").isEmpty)

            #expect(try fills.run(["verify", "--repair"]).int("repaired") == 1)
            let repaired = try fills.run(["verify"])
            #expect(try repaired.int("fillsChecked") == 3 && repaired.array("corruptFills").isEmpty)
            #expect(try fills.fetch() == 65536, "only the dropped fill is downloaded again")
            let after = try fills.run(["verify"])
            #expect(try after.int("fillsChecked") == 4 && after.array("corruptFills").isEmpty)
            #expect(try after.array("inconsistencies").isEmpty && after.array("damagedRecords").isEmpty)
        }
    }

    @Test(
        "§10 recover settles downloads not settled yet: the new store holds them as chunks, verifies clean and reads them without the origin",
        .requires(NginxServer.self))
    func recoverFills() async throws {
        try await FillStore.with { fills in
            let target = fills.dir + "/recovered"
            let report = try fills.run(["recover", "--to", target])
            let taken = try #require(report["fills"] as? [String: Any], "\(report)")
            #expect(try taken.int("recovered") == 4 && taken.int("lost") == 0)
            #expect(try report.int("versionsWithAbsentChunks") == 0)
            let verified = try fills.run(["verify"], in: target)
            #expect(try verified.int("chunksChecked") == 4 && verified.int("fillsChecked") == 0)
            #expect(try verified.array("corruptFills").isEmpty && verified.array("inconsistencies").isEmpty)
            #expect(try fills.fetch(in: target) == 0)
        }
    }
}
