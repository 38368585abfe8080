import Foundation
import TestSupport
import Testing

/// What the store promises about its files, paths and secrets (CONTRACT §6, §10).
@Suite(.serialized) struct SecurityTests {
    static let secret = "Bearer tok-77c1-NEVER-PRINTED"

    /// Every regular file under `directory`, recursively.
    static func files(under directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        return walker.compactMap { $0 as? String }.map { directory + "/" + $0 }.filter {
            var st = stat()
            return lstat($0, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
        }
    }

    static func mode(_ path: String) -> mode_t {
        var st = stat()
        lstat(path, &st)
        return st.st_mode & 0o777
    }

    @Test(
        "the store directory is 0700 and every file in it 0600: data.mdb, lock.mdb, writer leases, the reserve, hand-off files"
    )
    func modes() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 300_000, seed: 1), to: dir + "/f")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/f"])
            let handOff = try runJSON(store, ["fetch", "--domain", "d", "f", "--range", "0:1000"]).string("path")
            #expect(handOff.hasPrefix(store + "/tmp/"), "hand-off files stay in the store's tmp/")
            #expect(Self.mode(store) == 0o700 && Self.mode(store + "/tmp") == 0o700)
            let files = Self.files(under: store)
            #expect(files.contains(store + "/data.mdb") && files.contains(handOff))
            for file in files {
                #expect(Self.mode(file) & 0o077 == 0, "\(file) is \(String(Self.mode(file), radix: 8))")
            }
        }
    }

    @Test(
        "§10 a header value (a credential) is in no output of any command, success or error, and in no file of the store but data.mdb",
        .requires(NginxServer.self))
    func credentialsNeverPrinted() async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
            try TestData.write(TestData.random(count: 200_000, seed: 2), to: root + "/a.bin")
            try TestData.write(TestData.text(count: 5_000, seed: 3), to: root + "/sub/b.txt")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            defer { Task { await server.stop() } }
            let store = dir + "/store"
            var outputs: [CLIResult] = []
            for json in [[], ["--json"]] {
                func run(_ arguments: [String]) throws {
                    outputs.append(try runCLI(["--store", store] + json + arguments))
                }
                try run([
                    "domain", "add", "web", "--origin", server.baseURL, "--header", "Authorization: \(Self.secret)",
                ])
                try run(["domain", "sync", "web"])
                try run(["ls", "--domain", "web"])
                try run(["fetch", "--domain", "web", "a.bin", "--range", "0:5000"])
                try run(["fetch", "--domain", "web", "sub/b.txt", "--out", dir + "/out-\(json.count).txt"])
                try run(["fetch", "--domain", "web", "missing.bin"])  // 404: an error naming the item, not the header
                try run(["versions", "--domain", "web", "a.bin"])
                try run(["pin", "--domain", "web", "a.bin"])
                try run(["evict", "--domain", "web"])
                try run(["unpin", "--domain", "web", "a.bin"])
                try run(["gc"])
                try run(["stat"])
                try run(["verify"])
                try run(["domain", "ls"])
                try run(["domain", "set", "web", "--header", "Authorization: \(Self.secret)"])
                try run([
                    "domain", "add", "web", "--origin", server.baseURL, "--header", "Authorization: \(Self.secret)",
                ])  // exists
                try run(["sweep", "--all"])
                try run(["domain", "rm", "web"])
            }
            #expect(
                outputs.filter { $0.exitCode == 0 }.count >= 28,
                "the commands ran: \(outputs.filter { $0.exitCode != 0 })")
            for output in outputs {
                #expect(
                    !output.stdout.contains("NEVER-PRINTED") && !output.stderr.contains("NEVER-PRINTED"),
                    "\(output.arguments)")
            }
            for file in Self.files(under: store) where !file.hasSuffix("/data.mdb") {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
                #expect(bytes.range(of: Data("NEVER-PRINTED".utf8)) == nil, "\(file) holds the credential")
            }
        }
    }

    @Test(
        "identifiers never become paths: an item named ../../x is stored and fetched, and nothing is written outside the store"
    )
    func identifiersAreNotPaths() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/deep/store"
            let bytes = TestData.random(count: 70_000, seed: 4)
            try TestData.write(bytes, to: dir + "/f")
            let before = Set(Self.files(under: dir))
            for id in ["../../escaped", "/etc/passwd-like", "a/../../b"] {
                try runJSON(store, ["put", "--domain", "d", id, dir + "/f"])
                let path = try runJSON(store, ["fetch", "--domain", "d", id]).string("path")
                #expect(path.hasPrefix(store + "/tmp/fetch-") && !path.contains(".."), "\(path)")
                #expect(try TestData.read(path, count: 100_000) == bytes)
            }
            let outside = Set(Self.files(under: dir)).subtracting(before).filter { !$0.hasPrefix(store + "/") }
            #expect(outside.isEmpty, "written outside the store: \(outside)")
            #expect(
                !FileManager.default.fileExists(atPath: dir + "/escaped")
                    && !FileManager.default.fileExists(atPath: dir + "/b"))
        }
    }

    @Test(
        "--out never writes through a symlink it did not expect: without --force it refuses, with --force it replaces the link itself; the link's target is untouched"
    )
    func outDoesNotFollowSymlinks() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 70_000, seed: 5), to: dir + "/f")
            try runJSON(store, ["put", "--domain", "d", "f", dir + "/f"])
            let victim = TestData.text(count: 1_000, seed: 6)
            try TestData.write(victim, to: dir + "/victim")
            #expect(symlink(dir + "/victim", dir + "/out") == 0)
            expectError(
                try runCLI(["--store", store, "--json", "fetch", "--domain", "d", "f", "--out", dir + "/out"]), exit: 1,
                code: "fileExists")
            try runJSON(store, ["fetch", "--domain", "d", "f", "--out", dir + "/out", "--force"])
            var st = stat()
            #expect(lstat(dir + "/out", &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG, "the link itself was replaced")
            #expect(try TestData.read(dir + "/victim", count: 10_000) == victim, "the link's target is untouched")
        }
    }

    @Test(
        "§8 import never follows a symlink out of its tree: the link is stored as a symlink item and the file it names is neither read nor removed"
    )
    func importKeepsSymlinksAsLinks() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let outside = TestData.text(count: 2_000, seed: 7)
            try TestData.write(outside, to: dir + "/outside.txt")
            try FileManager.default.createDirectory(atPath: dir + "/tree", withIntermediateDirectories: true)
            try TestData.write(TestData.text(count: 100, seed: 8), to: dir + "/tree/inside.txt")
            #expect(symlink(dir + "/outside.txt", dir + "/tree/link") == 0)
            let imported = try runJSON(store, ["import", dir + "/tree", "--domain", "t"])
            #expect(try imported.int("symlinks") == 1 && (try imported.int("files")) == 1)
            expectError(
                try runCLI(["--store", store, "--json", "fetch", "--domain", "t", "link"]), exit: 1,
                code: "invalidArgument")
            #expect(try TestData.read(dir + "/outside.txt", count: 10_000) == outside, "the target stays where it was")
            let stat = try runJSON(store, ["stat"])
            #expect(try stat.int("logicalBytes") == 100, "only the file inside the tree was stored")
        }
    }
}
