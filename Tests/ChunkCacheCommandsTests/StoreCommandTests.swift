import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("§2 §7 init, put, stat and dedup through the CLI")
struct StoreCommandTests {
    @Test("D2 put of identical bytes: newChunks 0, same contentVersion, domainVersion not bumped")
    func identicalPut() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 300_000, seed: 61), to: dir + "/file")
            let first = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let version = try expectItemObject(first["item"], domain: "d", id: "doc", size: 300_000).contentVersion
            #expect(try first.int("newChunks") == 5)
            #expect(try first.domainVersion() == 1)
            let before = try storeFigures(store)

            // A copy elsewhere: the same bytes, so the same version (D2).
            try FileManager.default.copyItem(atPath: dir + "/file", toPath: dir + "/copy")
            let second = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/copy"])
            try expectItemObject(second["item"], domain: "d", id: "doc", size: 300_000, contentVersion: version)
            #expect(try second.int("chunks") == 5)
            #expect(try second.int("newChunks") == 0)
            #expect(try second.int("storedBytes") == 0)
            #expect(try second.domainVersion() == 1)
            #expect(try storeFigures(store) == before)
            let versions = try runJSON(store, ["versions", "--domain", "d", "doc"])
            #expect(try versions.array("versions").count == 1)
        }
    }

    @Test("D2 E1 put of other bytes gives a new content version and bumps the domain version by one")
    func otherBytes() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            var bytes = TestData.random(count: 200_000, seed: 62)
            try TestData.write(bytes, to: dir + "/file")
            let first = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            bytes[123_456] ^= 0xFF
            try TestData.write(bytes, to: dir + "/file")
            let second = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let v1 = try expectItemObject(first["item"], domain: "d", id: "doc").contentVersion
            let v2 = try expectItemObject(second["item"], domain: "d", id: "doc").contentVersion
            #expect(v1 != v2, "D2: one changed byte changes the content version")
            #expect(try second.domainVersion() == first.domainVersion() + 1, "E1")
            #expect(try second.int("newChunks") == 1)
            // Another domain has its own counter.
            let other = try runJSON(store, ["put", "--domain", "e", "doc", dir + "/file"])
            #expect(try other.domainVersion() == 1)
            try expectItemObject(other["item"], domain: "e", id: "doc", contentVersion: v2)
        }
    }

    @Test(
        "§7 §11 D2: put AAAA, BBBBBB, AAAA: the reply, versions and fetch all say AAAA is current, and the domain version moved"
    )
    func revertThroughCLI() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(Array("AAAA".utf8), to: dir + "/a")
            try TestData.write(Array("BBBBBB".utf8), to: dir + "/b")
            let first = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/a"])
            let second = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/b"])
            let third = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/a"])
            let a = try expectItemObject(first["item"], domain: "d", id: "doc", size: 4).contentVersion
            let b = try expectItemObject(second["item"], domain: "d", id: "doc", size: 6).contentVersion
            try expectItemObject(third["item"], domain: "d", id: "doc", size: 4, contentVersion: a)
            #expect(try third.domainVersion() == second.domainVersion() + 1, "a revert is a change")
            #expect(try third.int("newChunks") == 0 && third.int("storedBytes") == 0)
            let versions = try runJSON(store, ["versions", "--domain", "d", "doc"])
            let listed = try versions.array("versions").compactMap {
                ($0 as? [String: Any])?["contentVersion"] as? String
            }
            #expect(listed == [a, b], "newest first, the reverted version once")
            try expectItemObject(versions["item"], domain: "d", id: "doc", size: 4, contentVersion: a)
            let fetched = try runJSON(store, ["fetch", "--domain", "d", "doc"])
            #expect(try TestData.read(try fetched.string("path"), count: 16) == Array("AAAA".utf8))
            try expectItemObject(fetched["item"], domain: "d", id: "doc", size: 4, contentVersion: a)
            #expect(try runJSON(store, ["stat"]).int("logicalBytes") == 10, "each version counted once")
        }
    }

    @Test("§7 put of other bytes under an existing --version is invalidArgument and leaves the store unchanged")
    func immutableVersion() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let original = TestData.random(count: 200_000, seed: 63)
            try TestData.write(original, to: dir + "/original")
            try TestData.write(TestData.random(count: 400_000, seed: 64), to: dir + "/other")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/original", "--version", "v1"])
            let before = try storeFigures(store)

            let refused = try runCLI([
                "--store", store, "--json", "put", "--domain", "d", "doc", dir + "/other", "--version", "v1",
            ])
            expectError(refused, exit: 1, code: "invalidArgument", mentions: ["v1"])
            #expect(try storeFigures(store) == before)
            let verify = try runJSON(store, ["verify"])
            #expect(try verify.array("corrupt").isEmpty)
            let fetched = try runJSON(store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--strict"])
            #expect(try TestData.read(try fetched.string("path"), count: 500_000) == original)
            #expect(try fetched.domainVersion() == 1)

            // The fetch recorded the item's last use: one domain version (§11).
            #expect(try runJSON(store, ["anchor", "--domain", "d"]).domainVersion() == 2)
            // The same bytes again under v1 change nothing.
            let same = try runJSON(store, ["put", "--domain", "d", "doc", dir + "/original", "--version", "v1"])
            #expect(try same.int("newChunks") == 0)
            #expect(try same.domainVersion() == 2)
            #expect(try storeFigures(store) == before)
        }
    }

    @Test("§7 init twice with the same settings succeeds and changes nothing")
    func initTwice() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let first = try runJSON(store, ["init", "--chunk-size", "16KiB", "--max-size", "256MiB"])
            try TestData.write(TestData.random(count: 50_000, seed: 65), to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let before = try storeFigures(store)
            let second = try runJSON(store, ["init", "--chunk-size", "16KiB", "--max-size", "256MiB"])
            #expect(try second.int("chunkSize") == first.int("chunkSize"))
            #expect(try second.int("maxSize") == 256 << 20)
            #expect(try second.string("path") == first.string("path"))
            #expect(try storeFigures(store) == before)
            #expect(try runJSON(store, ["stat"]).int("chunkSize") == 16 << 10)
        }
    }

    @Test("§7 init with a different --chunk-size is invalidArgument and leaves the store unchanged")
    func initOtherChunkSize() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init"])
            try TestData.write(TestData.random(count: 50_000, seed: 66), to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/file"])
            let before = try storeFigures(store)
            let refused = try runCLI(["--store", store, "--json", "init", "--chunk-size", "4KiB"])
            expectError(refused, exit: 1, code: "invalidArgument", mentions: [store])
            #expect(try storeFigures(store) == before)
            #expect(try runJSON(store, ["stat"]).int("chunkSize") == defaultChunkSize)
        }
    }

    @Test(
        "§7 sizes accept 4096, 64KiB and 1MiB",
        arguments: [("4096", 4096), ("64KiB", 65536), ("1MiB", 1 << 20), ("4MiB", 4 << 20)])
    func sizeSyntax(text: String, bytes: Int64) throws {
        try withTemporaryDirectory { dir in
            let json = try runJSON(dir + "/store", ["init", "--chunk-size", text, "--max-size", "1GiB"])
            #expect(try json.int("chunkSize") == bytes)
            #expect(try json.int("maxSize") == 1 << 30)
        }
    }

    @Test("§7 stat figures: logicalBytes is the sum of every version's size, chunks the distinct stored chunks")
    func statFigures() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let random = TestData.random(count: 300_000, seed: 71)  // 5 chunks, raw
            let text = TestData.text(count: 200_000, seed: 72)  // 4 chunks, compressible
            try TestData.write(random, to: dir + "/random")
            try TestData.write(text, to: dir + "/text")
            try TestData.writeSparse(to: dir + "/zeros", length: 3 * 65536, pieces: [])  // 3 zero chunks
            var stored: Int64 = 0
            var newChunks: Int64 = 0
            for (domain, item, file, version) in [
                ("d", "random", "random", "r1"), ("d", "text", "text", "t1"),
                ("e", "zeros", "zeros", "z1"), ("d", "random", "random", "r2"),
            ] {
                let put = try runJSON(store, ["put", "--domain", domain, item, dir + "/" + file, "--version", version])
                stored += try put.int("storedBytes")
                newChunks += try put.int("newChunks")
            }
            var logical: Int64 = 0
            for (domain, item) in [("d", "random"), ("d", "text"), ("e", "zeros")] {
                let versions = try #require(
                    try runJSON(store, ["versions", "--domain", domain, item])["versions"] as? [[String: Any]])
                logical += try versions.reduce(0) { $0 + (try $1.int("size")) }
            }
            #expect(logical == 300_000 * 2 + 200_000 + 3 * 65536)

            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("domains") == 2)
            #expect(try stat.int("items") == 3)
            #expect(try stat.int("versions") == 4)
            #expect(try stat.int("chunks") == 9)
            #expect(newChunks == 9)
            #expect(try stat.int("logicalBytes") == logical)
            #expect(try stat.int("uniqueBytes") == 500_000)
            #expect(try stat.int("storedBytes") == stored)
            #expect(stored < 500_000, "the text compresses")
            #expect(abs(try stat.double("dedupRatio") - Double(logical) / 500_000) < 0.001)
            #expect(abs(try stat.double("compressionRatio") - 500_000 / Double(stored)) < 0.001)
            #expect(try stat.int("fileBytes") > stored)
            #expect(try runJSON(store, ["verify"]).int("chunksChecked") == 9)
        }
    }

    @Test("§2 dedup: a second version that changes one 64 KiB chunk of a 4 MiB file stores exactly 1 new chunk")
    func dedup() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            var bytes = TestData.random(count: 4 << 20, seed: 81)
            try TestData.write(bytes, to: dir + "/file")
            let first = try runJSON(store, ["put", "--domain", "d", "big", dir + "/file"])
            #expect(try first.int("chunks") == 64)
            #expect(try first.int("newChunks") == 64)
            bytes.replaceSubrange(17 * 65536..<18 * 65536, with: TestData.random(count: 65536, seed: 82))
            try TestData.write(bytes, to: dir + "/file")
            let second = try runJSON(store, ["put", "--domain", "d", "big", dir + "/file"])
            #expect(try second.int("chunks") == 64)
            #expect(try second.int("newChunks") == 1)
            #expect(try second.int("storedBytes") == 65536, "one random chunk, stored raw: its payload bytes")
            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("chunks") == 65)
            #expect(try stat.int("uniqueBytes") == (4 << 20) + 65536)
            #expect(try stat.int("logicalBytes") == 8 << 20)
            let fetched = try runJSON(store, ["fetch", "--domain", "d", "big", "--range", "\(17 * 65536 - 10):20"])
            try expectFetchRules(fetched, content: bytes, start: 17 * 65536 - 10, length: 20, alignment: 4096)
        }
    }

    /// Which of §2's sources names the store.
    enum StoreSource: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case option, chunkcacheStore, xdgCacheHome, home
        var testDescription: String { rawValue }
    }

    @Test(
        "§2 the store is --store, else $CHUNKCACHE_STORE, else $XDG_CACHE_HOME/chunkcache, else ~/.cache/chunkcache, created 0700",
        arguments: StoreSource.allCases)
    func storeLocation(source: StoreSource) throws {
        try withTemporaryDirectory { dir in
            var env: [String: String?] = ["HOME": dir + "/home", "XDG_CACHE_HOME": nil, "CHUNKCACHE_STORE": nil]
            var arguments = ["--json", "init"]
            let expected: String
            switch source {
            case .option:
                env["CHUNKCACHE_STORE"] = dir + "/ignored"
                env["XDG_CACHE_HOME"] = dir + "/ignored-xdg"
                arguments = ["--store", dir + "/a/b/explicit"] + arguments
                expected = dir + "/a/b/explicit"
            case .chunkcacheStore:
                env["CHUNKCACHE_STORE"] = dir + "/from-env"
                env["XDG_CACHE_HOME"] = dir + "/ignored-xdg"
                expected = dir + "/from-env"
            case .xdgCacheHome:
                env["XDG_CACHE_HOME"] = dir + "/xdg"
                expected = dir + "/xdg/chunkcache"
            case .home:
                expected = dir + "/home/.cache/chunkcache"
            }
            let result = try runCLI(arguments, env: env)
            #expect(result.exitCode == 0, "\(result)")
            #expect(try result.json().string("path") == expected)
            #expect(try TestData.status(expected).st_mode & 0o777 == 0o700)
            #expect(FileManager.default.fileExists(atPath: expected + "/data.mdb"))
            for ignored in ["/ignored", "/ignored-xdg"] {
                #expect(!FileManager.default.fileExists(atPath: dir + ignored))
            }
        }
    }

    @Test(
        "§6 §8 a put that does not fit --max-size is insufficientQuota and changes nothing; an import's file that does not fit is that entry's failure, back at its path; init --max-size raises the bound"
    )
    func storeFull() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            #expect(try runJSON(store, ["init", "--max-size", "1MiB"]).int("maxSize") == 1 << 20)
            let small = TestData.random(count: 100_000, seed: 201)
            let big = TestData.random(count: 4 << 20, seed: 202)
            try TestData.write(small, to: dir + "/small")
            try TestData.write(big, to: dir + "/big")
            try runJSON(store, ["put", "--domain", "d", "small", dir + "/small"])
            var before = try storeFigures(store)

            let put = try runCLI(["--store", store, "--json", "put", "--domain", "d", "big", dir + "/big"])
            expectError(put, exit: 1, code: "insufficientQuota", mentions: [store])
            #expect(try storeFigures(store) == before)

            try FileManager.default.createDirectory(atPath: dir + "/tree", withIntermediateDirectories: true)
            try TestData.write(big, to: dir + "/tree/big")
            // Past the domain's creation an import is never undone: the file that does not fit is reported, the
            // rest (none here) is imported, and what was not goes back where it was.
            let imported = try runCLI(["--store", store, "--json", "import", dir + "/tree", "--domain", "t"])
            #expect(imported.exitCode == 0, "\(imported)")
            let failures = try imported.json().array("failures").compactMap { $0 as? [String: Any] }
            #expect(failures.count == 1 && failures.first?["path"] as? String == "big", "\(failures)")
            #expect(failures.first?["code"] as? String == "insufficientQuota", "\(failures)")
            #expect(imported.stderr.contains("big was not imported"), "\(imported.stderr)")
            var after = try storeFigures(store)
            #expect(after.removeValue(forKey: "domains") == "2", "the domain lives, empty")
            before.removeValue(forKey: "domains")
            #expect(after == before, "nothing of the file that did not fit is stored")
            #expect(
                try TestData.read(dir + "/tree/big", count: (4 << 20) + 1) == big,
                "§8: what was not imported is back at its path, byte-exact")
            let noDomain = try runCLI(["--store", store, "--json", "versions", "--domain", "t", "big"])
            expectError(noDomain, exit: 1, code: "noSuchItem", mentions: ["t"])

            let fetched = try runJSON(store, ["fetch", "--domain", "d", "small"])
            #expect(try TestData.read(try fetched.string("path"), count: 200_000) == small)

            #expect(try runJSON(store, ["init", "--max-size", "64MiB"]).int("maxSize") == 64 << 20)
            let retried = try runJSON(store, ["put", "--domain", "d", "big", dir + "/big"])
            #expect(try retried.int("newChunks") == 64)
        }
    }
}
