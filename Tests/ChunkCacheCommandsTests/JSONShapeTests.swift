import Foundation
import TestSupport
import Testing

/// Where the global options go: `chunkcache --store D --json stat` or `chunkcache stat --store D --json`.
enum OptionPlacement: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case beforeCommand
    case afterCommand

    var testDescription: String { rawValue }

    func arguments(store: String, _ command: [String]) -> [String] {
        switch self {
        case .beforeCommand: return ["--store", store, "--json"] + command
        case .afterCommand: return command + ["--store", store, "--json"]
        }
    }
}

/// CONTRACT §7: with `--json` every command prints exactly one JSON object holding at least its listed keys.
@Suite("§7 JSON output of every command")
struct JSONShapeTests {
    /// Runs `command` with the global options placed as `placement` says, expecting exit 0 and one object.
    func run(_ placement: OptionPlacement, store: String, _ command: [String]) throws -> [String: Any] {
        let result = try runCLI(placement.arguments(store: store, command))
        try #require(result.exitCode == 0, "\(result)")
        #expect(result.stderr.isEmpty, "a success prints nothing on stderr: \(result.stderr)")
        #expect(result.stdout.hasSuffix("}\n") && result.stdout.hasPrefix("{"), "\(result.stdout)")
        return try result.json()
    }

    @Test("§7 init prints chunkSize, maxSize and the canonical path", arguments: OptionPlacement.allCases)
    func initShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let json = try run(placement, store: store, ["init", "--chunk-size", "16KiB", "--max-size", "64MiB"])
            #expect(try json.int("chunkSize") == 16 << 10)
            #expect(try json.int("maxSize") == 64 << 20)
            #expect(try json.string("path") == store)
        }
    }

    @Test(
        "§7 put prints the item object, chunk counts, storedBytes and domainVersion",
        arguments: OptionPlacement.allCases)
    func putShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let file = dir + "/file"
            // Two random chunks, one zero chunk, a 100-byte tail.
            let bytes =
                TestData.random(count: 2 << 16, seed: 1) + [UInt8](repeating: 0, count: 1 << 16)
                + TestData.random(count: 100, seed: 2)
            try TestData.write(bytes, to: file)
            let json = try run(
                placement, store: store, ["put", "--domain", "docs", "report.bin", file, "--version", "v1"])
            try expectItemObject(
                json["item"], domain: "docs", id: "report.bin", size: Int64(bytes.count), contentVersion: "v1")
            #expect(try json.int("chunks") == 4)
            #expect(try json.int("newChunks") == 3)
            #expect(try json.int("zeroChunks") == 1)
            #expect(try json.int("storedBytes") >= 2 << 16)  // random bytes do not compress
            #expect(try json.domainVersion() == 1)
        }
    }

    @Test(
        "§7 import prints domain, files, folders, symlinks, logicalBytes, newChunks, domainVersion",
        arguments: OptionPlacement.allCases)
    func importShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let tree = dir + "/tree"
            try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
            try TestData.write(TestData.text(count: 5000, seed: 3), to: tree + "/sub/a.txt")
            let json = try run(placement, store: store, ["import", tree, "--domain", "photos", "--copy"])
            #expect(try json.string("domain") == "photos")
            #expect(try json.int("files") == 1)
            #expect(try json.int("folders") == 1)
            #expect(try json.int("symlinks") == 0)
            #expect(try json.int("logicalBytes") == 5000)
            #expect(try json.int("newChunks") == 1)
            #expect(try json.domainVersion() == 1, "an import publishes a new domain in one change")
        }
    }

    /// The three shapes of `fetch`: whole file, `--range`, `--out`.
    enum FetchKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case whole, range, out
        var testDescription: String { rawValue }
    }

    @Test(
        "§7 §10 fetch prints path, owner, item, retrievedRange, flags, domainVersion, downloadedBytes and requests",
        arguments: FetchKind.allCases, OptionPlacement.allCases)
    func fetchShape(kind: FetchKind, placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let file = dir + "/file"
            let bytes = TestData.random(count: 200_000, seed: 4)
            try TestData.write(bytes, to: file)
            try runJSON(store, ["put", "--domain", "d", "movie", file, "--version", "v1"])
            var command = ["fetch", "--domain", "d", "movie"]
            switch kind {
            case .whole: break
            case .range: command += ["--range", "70000:10"]
            case .out: command += ["--out", dir + "/copy"]
            }
            let json = try run(placement, store: store, command)
            let path = try json.string("path")
            try expectItemObject(json["item"], domain: "d", id: "movie", size: 200_000, contentVersion: "v1")
            let range = try json.retrievedRange()
            #expect(try json.flags() == [])
            #expect(try json.domainVersion() == 1)
            #expect(
                try json.int("downloadedBytes") == 0 && json.int("requests") == 0,
                "a domain without an origin downloads nothing")
            switch kind {
            case .whole:
                #expect(try json.string("owner") == "caller")
                #expect(path.hasPrefix(store + "/tmp/"))
                #expect(range == Span(0, 200_000))
            case .range:
                #expect(try json.string("owner") == "caller")
                #expect(path.hasPrefix(store + "/tmp/"))
                #expect(range == Span(65536, 65536))
            case .out:
                #expect(try json.string("owner") == "destination")
                #expect(path == dir + "/copy")
                #expect(range == Span(0, 200_000))
            }
            #expect(try TestData.status(path).st_size == 200_000)
            #expect(
                try TestData.read(path, offset: range.location, count: Int(range.length))
                    == bytes.slice(range.location, range.length))
        }
    }

    @Test("§7 versions prints the item and its versions newest first", arguments: OptionPlacement.allCases)
    func versionsShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 1000, seed: 5), to: dir + "/one")
            try TestData.write(TestData.random(count: 70000, seed: 6), to: dir + "/two")
            try runJSON(store, ["put", "--domain", "d", "notes", dir + "/one", "--version", "first"])
            try runJSON(store, ["put", "--domain", "d", "notes", dir + "/two", "--version", "second"])
            let json = try run(placement, store: store, ["versions", "--domain", "d", "notes"])
            try expectItemObject(json["item"], domain: "d", id: "notes", size: 70000, contentVersion: "second")
            let versions = try #require(json["versions"] as? [[String: Any]])
            try #require(versions.count == 2)
            #expect(try versions.map { try $0.string("contentVersion") } == ["second", "first"])
            #expect(try versions.map { try $0.int("size") } == [70000, 1000])
            #expect(try versions.map { try $0.int("cachedBytes") } == [70000, 1000])
            let formatter = ISO8601DateFormatter()
            for version in versions {
                let created = try #require(
                    formatter.date(from: try version.string("createdAt")), "createdAt is not ISO 8601")
                #expect(abs(created.timeIntervalSinceNow) < 600)
            }
        }
    }

    @Test("§7 stat prints every figure", arguments: OptionPlacement.allCases)
    func statShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let json = try run(placement, store: store, ["stat"])
            for key in [
                "chunkSize", "domains", "items", "versions", "chunks", "logicalBytes", "uniqueBytes", "storedBytes",
                "fileBytes",
            ] {
                #expect(json[key] is NSNumber, "\(key) in \(json)")
            }
            #expect(try json.int("chunkSize") == defaultChunkSize)
            #expect(try json.int("domains") == 0)
            #expect(try json.int("items") == 0)
            #expect(try json.int("versions") == 0)
            #expect(try json.int("chunks") == 0)
            #expect(try json.int("logicalBytes") == 0)
            #expect(try json.int("uniqueBytes") == 0)
            #expect(try json.int("storedBytes") == 0)
            // An empty store has nothing deduplicated or compressed: both ratios are exactly 1.
            #expect(try json.double("dedupRatio") == 1)
            #expect(try json.double("compressionRatio") == 1)
            #expect(try json.int("fileBytes") > 0)
        }
    }

    @Test("§7 verify prints chunksChecked, corrupt and repaired", arguments: OptionPlacement.allCases)
    func verifyShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.text(count: 150_000, seed: 7), to: dir + "/file")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/file"])
            let json = try run(placement, store: store, ["verify"])
            #expect(try json.int("chunksChecked") == 3)
            #expect(try json.array("corrupt").isEmpty)
            #expect(try json.int("repaired") == 0)
        }
    }

    @Test("§7 sweep prints removed", arguments: OptionPlacement.allCases)
    func sweepShape(placement: OptionPlacement) throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let json = try run(placement, store: store, ["sweep"])
            #expect(try json.int("removed") == 0)
        }
    }

    @Test("§7 global options also work as --store=DIR and with --tmp-grace before the command")
    func equalsFormAndTmpGrace() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let first = try runCLI(["--store=\(store)", "--tmp-grace", "5m", "--json", "stat"])
            #expect(first.exitCode == 0, "\(first)")
            #expect(try first.json().int("chunkSize") == defaultChunkSize)
            let second = try runCLI(["--json", "--tmp-grace=30s", "stat", "--store=\(store)"])
            #expect(second.exitCode == 0, "\(second)")
            #expect(try second.json().int("chunks") == 0)
        }
    }

    @Test("§7 a store directory named like a command still works with --store before the command")
    func storeNamedLikeCommand() throws {
        try withTemporaryDirectory { dir in
            // `--store stat` names the relative directory "stat"; the command comes after it.
            let result = try runCLI(["--store", "stat", "--json", "stat"], currentDirectory: dir)
            #expect(result.exitCode == 0, "\(result)")
            #expect((try? result.json().int("chunkSize")) == defaultChunkSize)
            #expect(FileManager.default.fileExists(atPath: dir + "/stat/data.mdb"))
        }
    }

    @Test("§7 without --json each command prints a short human summary, not JSON")
    func humanSummary() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 5000, seed: 8), to: dir + "/file")
            let put = try runCLI(["--store", store, "put", "--domain", "d", "x", dir + "/file", "--version", "v7"])
            #expect(put.exitCode == 0)
            #expect(!put.stdout.hasPrefix("{") && put.stdout.contains("v7"), "\(put)")
            let stat = try runCLI(["stat", "--store", store])
            #expect(stat.exitCode == 0)
            #expect(!stat.stdout.hasPrefix("{") && stat.stdout.contains(store), "\(stat)")
        }
    }

    @Test("§7 identifiers with quotes, backslashes, tabs and non-ASCII come back intact in the JSON")
    func escaping() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let domain = "dö \"m\""
            let id = "x\ty\\z\"é😀/ü"
            try TestData.write(Array("hello".utf8), to: dir + "/file")
            let put = try runJSON(store, ["put", "--domain", domain, id, dir + "/file", "--version", "vé\"1"])
            try expectItemObject(put["item"], domain: domain, id: id, size: 5, contentVersion: "vé\"1")
            let fetched = try runJSON(store, ["fetch", "--domain", domain, id])
            try expectItemObject(fetched["item"], domain: domain, id: id, size: 5, contentVersion: "vé\"1")
            #expect(try TestData.read(try fetched.string("path"), count: 10) == Array("hello".utf8))
            let versions = try runJSON(store, ["versions", "--domain", domain, id])
            try expectItemObject(versions["item"], domain: domain, id: id, contentVersion: "vé\"1")
        }
    }
}
