import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("§8 import through the CLI")
struct ImportTests {
    /// A small tree: nested folders, an empty file, a file of zeros with holes, text, random bytes, and two
    /// symlinks (one inside the tree, one pointing out of it). Returns the regular files' contents by relative path.
    static func makeTree(at root: String) throws -> [String: [UInt8]] {
        let fm = FileManager.default
        for folder in ["docs", "docs/2024", "media", "media/raw", "emptyfolder"] {
            try fm.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        var files: [String: [UInt8]] = [
            "readme.txt": TestData.text(count: 3000, seed: 101),
            "docs/2024/report.txt": TestData.text(count: 150_000, seed: 102),
            "media/raw/photo.bin": TestData.random(count: 200_000, seed: 103),
            "docs/empty": [],
        ]
        for (path, bytes) in files { try TestData.write(bytes, to: root + "/" + path) }
        files["media/zeros.img"] = try TestData.writeSparse(
            to: root + "/media/zeros.img", length: 5 * 65536 + 7,
            pieces: [
                (2 * 65536, TestData.random(count: 1000, seed: 104))
            ])
        try fm.createSymbolicLink(atPath: root + "/docs/latest", withDestinationPath: "2024/report.txt")
        try fm.createSymbolicLink(atPath: root + "/passwd", withDestinationPath: "/etc/passwd")
        return files
    }

    static let expectedCounts = (files: Int64(5), folders: Int64(5), symlinks: Int64(2))

    @Test("§8 import counts files, folders and symlinks, moves the tree, and every file is fetchable by its path")
    func importMoves() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let tree = dir + "/tree"
            let files = try Self.makeTree(at: tree)
            let json = try runJSON(store, ["import", tree, "--domain", "home"])
            #expect(try json.string("domain") == "home")
            #expect(try json.int("files") == Self.expectedCounts.files)
            #expect(try json.int("folders") == Self.expectedCounts.folders)
            #expect(try json.int("symlinks") == Self.expectedCounts.symlinks)
            #expect(try json.int("logicalBytes") == Int64(files.values.reduce(0) { $0 + $1.count }))
            // readme, report (3 chunks), photo (4 chunks), the one data chunk of zeros.img.
            #expect(try json.int("newChunks") == 1 + 3 + 4 + 1)
            #expect(try json.domainVersion() == 1, "an import publishes a new domain in one change")
            #expect(
                !FileManager.default.fileExists(atPath: tree),
                "§8: without --copy the directory is moved into the store")

            for (path, bytes) in files {
                let fetched = try runJSON(store, ["fetch", "--domain", "home", path])
                try expectItemObject(fetched["item"], domain: "home", id: path, size: Int64(bytes.count))
                #expect(try TestData.read(try fetched.string("path"), count: bytes.count + 1) == bytes, "\(path)")
                #expect(try fetched.flags() == (path == "media/zeros.img" ? ["knownSparseRanges"] : []), "\(path)")
            }
            let partial = try runJSON(store, ["fetch", "--domain", "home", "media/zeros.img", "--range", "65536:10"])
            try expectFetchRules(
                partial, content: try #require(files["media/zeros.img"]), start: 65536, length: 10, alignment: 4096)
            #expect(try partial.flags() == [])

            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("domains") == 1)
            #expect(
                try stat.int("items") == Self.expectedCounts.files + Self.expectedCounts.folders
                    + Self.expectedCounts.symlinks)
            #expect(try stat.int("versions") == Self.expectedCounts.files)
        }
    }

    @Test("§8 import --copy leaves the directory in place and unchanged")
    func importCopy() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let tree = dir + "/tree"
            let files = try Self.makeTree(at: tree)
            let json = try runJSON(store, ["import", tree, "--domain", "home", "--copy"])
            #expect(try json.int("files") == Self.expectedCounts.files)
            for (path, bytes) in files {
                #expect(try TestData.read(tree + "/" + path, count: bytes.count + 1) == bytes)
            }
            #expect(
                try FileManager.default.destinationOfSymbolicLink(atPath: tree + "/docs/latest") == "2024/report.txt")
            #expect(FileManager.default.fileExists(atPath: tree + "/emptyfolder"))
        }
    }

    @Test("§8 import into an existing domain is fileExists, the directory is untouched and the store unchanged")
    func importExistingDomain() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let first = dir + "/first"
            let second = dir + "/second"
            _ = try Self.makeTree(at: first)
            let files = try Self.makeTree(at: second)
            try runJSON(store, ["import", first, "--domain", "home", "--copy"])
            let before = try storeFigures(store)
            for copy in [[], ["--copy"]] {
                let refused = try runCLI(["--store", store, "--json", "import", second, "--domain", "home"] + copy)
                expectError(refused, exit: 1, code: "fileExists", mentions: ["home"])
                for (path, bytes) in files {
                    #expect(
                        try TestData.read(second + "/" + path, count: bytes.count + 1) == bytes, "\(path) untouched")
                }
                #expect(try storeFigures(store) == before)
            }
            // A domain made by put counts as existing too.
            try TestData.write([1, 2, 3], to: dir + "/small")
            try runJSON(store, ["put", "--domain", "made-by-put", "x", dir + "/small"])
            let byPut = try runCLI(["--store", store, "--json", "import", second, "--domain", "made-by-put"])
            expectError(byPut, exit: 1, code: "fileExists", mentions: ["made-by-put"])
            #expect(FileManager.default.fileExists(atPath: second + "/readme.txt"))
        }
    }

    @Test("§7 fetch of a folder or symlink item is invalidArgument")
    func fetchFolderOrSymlink() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            _ = try Self.makeTree(at: dir + "/tree")
            try runJSON(store, ["import", dir + "/tree", "--domain", "home"])
            for item in ["docs", "docs/2024", "emptyfolder", "docs/latest", "passwd"] {
                for extra in [[], ["--range", "0:10"], ["--out", dir + "/out"]] {
                    let result = try runCLI(["--store", store, "--json", "fetch", "--domain", "home", item] + extra)
                    expectError(result, exit: 1, code: "invalidArgument", mentions: [item])
                }
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: store + "/tmp") == [])
        }
    }

    @Test("§8 importing the same files into a second domain stores no new chunks")
    func importDedup() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            _ = try Self.makeTree(at: dir + "/a")
            _ = try Self.makeTree(at: dir + "/b")
            try runJSON(store, ["import", dir + "/a", "--domain", "one"])
            let second = try runJSON(store, ["import", dir + "/b", "--domain", "two"])
            #expect(try second.int("newChunks") == 0)
            #expect(try runJSON(store, ["stat"]).int("domains") == 2)
        }
    }
}
