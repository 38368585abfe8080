import ChunkCache
import Foundation
import SeededRandom
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// CONTRACT §8: an import killed (SIGKILL) at any point resumes with `import --resume` and finishes exactly
/// once, every file byte-exact.
@Suite("§8 import killed at random points")
struct ImportCrashTests {
    /// A tree of `count` files (1 to 9 KiB, some repeated) in 20 folders, two levels deep. Returns the
    /// files' contents by relative path.
    static func makeTree(at root: String, count: Int) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for index in 0..<count {
            let folder = "d\(index % 20)/e\(index % 3)"
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            let bytes =
                index % 7 == 0
                ? TestData.text(count: 4096, seed: 7)
                : TestData.random(count: 1024 * (1 + index % 9), seed: UInt64(index))
            try TestData.write(bytes, to: root + "/\(folder)/f\(index)")
            files["\(folder)/f\(index)"] = bytes
        }
        return files
    }

    /// Checks the store holds the domain's import exactly once: finished once, every file byte-exact, no
    /// item twice.
    static func expectImported(
        _ store: String, _ files: [String: [UInt8]], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let cache = try await ChunkCache.open(at: store, chunkSize: nil, maxSize: nil, resumingImports: false)
        let info = try #require(try await cache.domains().first { $0.name == "d" }, sourceLocation: sourceLocation)
        #expect(
            info.importFinished && info.importsFinished == 1, "G4: importDidFinish once, not \(info.importsFinished)",
            sourceLocation: sourceLocation)
        var page = EnumerationPage.initialPageSortedByName
        var identifiers: [String] = []
        let all = try await cache.enumeratorOfAllItems(in: "d")
        while true {
            let result = try await all.enumerateItems(startingAt: page, suggestedPageSize: 5000)
            identifiers += result.items.filter { $0.kind == .file }.map(\.identifier)
            guard let next = result.nextPage else { break }
            page = next
        }
        #expect(
            identifiers.count == files.count && Set(identifiers) == Set(files.keys), "every file once",
            sourceLocation: sourceLocation)
        var wrong = 0
        for (path, bytes) in files {
            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", path))
            if try TestData.read(fetched.url.path, count: bytes.count + 1) != bytes { wrong += 1 }
            unlink(fetched.url.path)
        }
        #expect(wrong == 0, "\(wrong) files differ", sourceLocation: sourceLocation)
    }

    @Test(
        "§8 seed 002: kill -9 once the directory is moved into the store, before the import finished: `import --resume` finishes it from the staging area, once, byte-exact"
    )
    func killedAfterTakeOver() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            let files = try Self.makeTree(at: tree, count: 2_000)
            let store = dir + "/store"
            let importer = try CLIProcess(["--store", store, "--json", "import", tree, "--domain", "d"])
            // The directory's path goes at the takeover, before the first of 2,000 files is read.
            let deadline = Date() + 60
            while FileManager.default.fileExists(atPath: tree) && Date() < deadline { usleep(100) }
            importer.kill9()
            _ = importer.wait()
            #expect(!FileManager.default.fileExists(atPath: tree), "the directory was taken over")
            let domains = try runJSON(store, ["domain", "ls"]).array("domains").compactMap { $0 as? [String: Any] }
            #expect(domains.first?["importFinished"] as? Bool == false, "killed before the import finished")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: store + "/imports").count == 1,
                "the tree waits in the staging area")
            let resume = try runJSON(store, ["import", "--resume"])
            #expect(try resume.array("resumed").count == 1)
            try await Self.expectImported(store, files)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: store + "/imports").isEmpty,
                "the staging area is empty once the import finished")
            #expect(!FileManager.default.fileExists(atPath: tree), "nothing went back: every file was imported")
        }
    }

    @Test(
        "§8 G4: kill -9 at 30 random points of an import of 2,000 files; `import --resume` finishes it once, byte-exact; a moved source is removed only after"
    )
    func killedImports() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            let files = try Self.makeTree(at: tree, count: 2_000)
            // How long a whole import takes here, to spread the kills over it.
            let began = Date()
            try runJSON(dir + "/timing", ["import", tree, "--domain", "d", "--copy"])
            let duration = Date().timeIntervalSince(began)
            var rng = SplitMix64(seed: 2026)
            var resumed = 0
            for round in 0..<30 {
                let store = dir + "/store\(round)"
                let moving = round % 5 == 4
                var source = tree
                if moving {  // a copy of the tree, to be moved into the store
                    source = dir + "/moving\(round)"
                    try runTool("cp", "-a", tree, source)
                }
                let importer = try CLIProcess(
                    ["--store", store, "--json", "import", source, "--domain", "d"] + (moving ? [] : ["--copy"]))
                usleep(UInt32(Double(rng.next() % 1000) / 1000 * duration * 1_000_000))
                importer.kill9()
                _ = importer.wait()
                let resume = try runCLI(["--store", store, "--json", "import", "--resume"])
                #expect(resume.exitCode == 0, "\(resume)")
                if let done = try? resume.json().array("resumed"), !done.isEmpty { resumed += 1 }
                let exists = (try? runJSON(store, ["domain", "ls"]).array("domains").isEmpty == false) ?? false
                if !exists {  // killed before the domain was made: nothing to resume, the import runs again
                    try runJSON(store, ["import", source, "--domain", "d"] + (moving ? [] : ["--copy"]))
                }
                try await Self.expectImported(store, files)
                if moving {
                    #expect(
                        !FileManager.default.fileExists(atPath: source),
                        "the moved source is removed once the import finished")
                }
                try? FileManager.default.removeItem(atPath: store)
            }
            #expect(resumed >= 5, "most kills land inside the import: \(resumed) of 30 resumed")
        }
    }
}
