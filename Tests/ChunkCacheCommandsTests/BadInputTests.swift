import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A store with a file item, a folder and a symlink, plus a regular file and a folder beside it.
struct BadInputFixture: Sendable {
    let dir: String
    var store: String { dir + "/store" }
    /// A regular file outside the store (also the bytes of `d/doc` version `v1`).
    var file: String { dir + "/file" }
    /// Other bytes than `file`.
    var otherFile: String { dir + "/other" }
    /// A folder outside the store.
    var folder: String { dir + "/folder" }
    var missing: String { dir + "/missing" }

    /// Builds the store: domain `d` with item `doc` (version `v1`), domain `tree` with folder `sub` and symlink `link`.
    static func make(in dir: String) throws -> BadInputFixture {
        let fixture = BadInputFixture(dir: dir)
        try TestData.write(TestData.random(count: 200_000, seed: 111), to: fixture.file)
        try TestData.write(TestData.random(count: 100_000, seed: 112), to: fixture.otherFile)
        try FileManager.default.createDirectory(atPath: fixture.folder + "/inner", withIntermediateDirectories: true)
        try runJSON(fixture.store, ["put", "--domain", "d", "doc", fixture.file, "--version", "v1"])
        let tree = dir + "/tree"
        try FileManager.default.createDirectory(atPath: tree + "/sub", withIntermediateDirectories: true)
        try TestData.write([1, 2, 3], to: tree + "/sub/x")
        try FileManager.default.createSymbolicLink(atPath: tree + "/link", withDestinationPath: "sub/x")
        try runJSON(fixture.store, ["import", tree, "--domain", "tree"])
        return fixture
    }
}

/// One bad command line and what §6/§7 say it gives.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var arguments: @Sendable (BadInputFixture) -> [String]
    var exit: Int32
    var code: String
    var mentions: @Sendable (BadInputFixture) -> [String]

    var testDescription: String { name }

    static func usage(
        _ name: String, _ arguments: @escaping @Sendable (BadInputFixture) -> [String], mentions: [String]
    ) -> BadInput {
        BadInput(name: name, arguments: arguments, exit: 64, code: "invalidArgument", mentions: { _ in mentions })
    }

    static func engine(
        _ name: String, _ code: String, _ arguments: @escaping @Sendable (BadInputFixture) -> [String],
        mentions: @escaping @Sendable (BadInputFixture) -> [String]
    ) -> BadInput {
        BadInput(name: name, arguments: arguments, exit: 1, code: code, mentions: mentions)
    }
}

@Suite("§6 §7 bad input to every command")
struct BadInputTests {
    static let cases: [BadInput] = [
        // init
        .usage("init --chunk-size abc", { _ in ["init", "--chunk-size", "abc"] }, mentions: ["abc", "--chunk-size"]),
        .engine(
            "init --chunk-size 3000 (not a power of two)", "invalidArgument",
            { _ in ["init", "--chunk-size", "3000"] }, mentions: { _ in ["3000"] }),
        .engine(
            "init --chunk-size 8MiB (too large)", "invalidArgument", { _ in ["init", "--chunk-size", "8MiB"] },
            mentions: { _ in ["8388608"] }),
        .engine(
            "init --chunk-size 4KiB on a 64 KiB store", "invalidArgument", { _ in ["init", "--chunk-size", "4KiB"] },
            mentions: { [$0.store] }),
        .usage("init --max-size 10", { _ in ["init", "--max-size", "10"] }, mentions: ["--max-size"]),
        .usage("init with an unknown flag", { _ in ["init", "--bogus"] }, mentions: ["--bogus"]),
        // put
        .engine(
            "put of a missing file", "invalidArgument", { ["put", "--domain", "d", "doc", $0.missing] },
            mentions: { [$0.missing] }),
        .engine(
            "put of a directory", "invalidArgument", { ["put", "--domain", "d", "doc", $0.folder] },
            mentions: { [$0.folder] }),
        .engine(
            "put of other bytes under an existing --version", "invalidArgument",
            { ["put", "--domain", "d", "doc", $0.otherFile, "--version", "v1"] }, mentions: { _ in ["\"v1\"", "doc"] }),
        .engine(
            "put onto a folder item", "invalidArgument", { ["put", "--domain", "tree", "sub", $0.file] },
            mentions: { _ in ["sub"] }),
        .engine(
            "put onto a symlink item", "invalidArgument", { ["put", "--domain", "tree", "link", $0.file] },
            mentions: { _ in ["link"] }),
        .engine(
            "put with a 129-byte --version (D1)", "invalidArgument",
            { ["put", "--domain", "d", "doc", $0.file, "--version", String(repeating: "v", count: 129)] },
            mentions: { _ in ["128"] }),
        .engine(
            "put with an empty --version", "invalidArgument",
            { ["put", "--domain", "d", "doc", $0.file, "--version", ""] },
            mentions: { _ in ["version"] }),
        .engine(
            "put with an empty --domain", "invalidArgument", { ["put", "--domain", "", "doc", $0.file] },
            mentions: { _ in ["domain"] }),
        .usage("put without --domain", { ["put", "doc", $0.file] }, mentions: ["--domain"]),
        .usage("put without FILE", { _ in ["put", "--domain", "d", "doc"] }, mentions: ["<file>"]),
        .usage(
            "§7 put without ITEM, with --version VALUE: the missing argument, not the tool's version",
            { ["put", "--domain", "d", $0.file, "--version", "v1"] }, mentions: ["<file>"]),
        .usage(
            "put with an unknown flag", { ["put", "--domain", "d", "doc", $0.file, "--compress"] },
            mentions: ["--compress"]),
        // import
        .engine(
            "import of a file", "invalidArgument", { ["import", $0.file, "--domain", "new"] }, mentions: { [$0.file] }),
        .engine(
            "import of a missing directory", "invalidArgument", { ["import", $0.missing, "--domain", "new"] },
            mentions: { [$0.missing] }),
        .engine(
            "import into an existing domain", "fileExists", { ["import", $0.folder, "--domain", "tree"] },
            mentions: { _ in ["\"tree\""] }),
        .usage("import without --domain", { ["import", $0.folder] }, mentions: ["--domain"]),
        .usage(
            "import with an unknown flag", { ["import", $0.folder, "--domain", "new", "--move"] }, mentions: ["--move"]),
        // fetch
        .engine(
            "fetch from an unknown domain", "noSuchItem", { _ in ["fetch", "--domain", "nodomain", "doc"] },
            mentions: { _ in ["nodomain"] }),
        .engine(
            "fetch of an unknown item", "noSuchItem", { _ in ["fetch", "--domain", "d", "nothing"] },
            mentions: { _ in ["nothing"] }),
        .engine(
            "fetch of an unknown item with --range", "noSuchItem",
            { _ in ["fetch", "--domain", "d", "nothing", "--range", "0:1"] },
            mentions: { _ in ["nothing"] }),
        .engine(
            "A11 fetch --strict of an unknown version", "versionNoLongerAvailable",
            { _ in ["fetch", "--domain", "d", "doc", "--version", "v9", "--strict"] }, mentions: { _ in ["v9"] }),
        .engine(
            "A11 fetch --strict --range of an unknown version", "versionNoLongerAvailable",
            { _ in ["fetch", "--domain", "d", "doc", "--version", "v9", "--strict", "--range", "0:10"] },
            mentions: { _ in ["v9"] }),
        .engine(
            "fetch of a folder item", "invalidArgument", { _ in ["fetch", "--domain", "tree", "sub"] },
            mentions: { _ in ["sub"] }),
        .engine(
            "fetch of a symlink item", "invalidArgument", { _ in ["fetch", "--domain", "tree", "link"] },
            mentions: { _ in ["link"] }),
        .engine(
            "fetch of an empty item identifier", "invalidArgument", { _ in ["fetch", "--domain", "d", ""] },
            mentions: { _ in ["identifier"] }),
        .engine(
            "fetch --out onto an existing file", "fileExists",
            { ["fetch", "--domain", "d", "doc", "--out", $0.otherFile] },
            mentions: { [$0.otherFile] }),
        .engine(
            "fetch --out into a missing folder", "invalidArgument",
            { ["fetch", "--domain", "d", "doc", "--out", $0.missing + "/x"] },
            mentions: { [$0.missing] }),
        .engine(
            "fetch --out --force onto a directory", "invalidArgument",
            { ["fetch", "--domain", "d", "doc", "--out", $0.folder, "--force"] },
            mentions: { [$0.folder] }),
        .usage("fetch --range abc", { _ in ["fetch", "--domain", "d", "doc", "--range", "abc"] }, mentions: ["abc"]),
        .usage("fetch --range 5", { _ in ["fetch", "--domain", "d", "doc", "--range", "5"] }, mentions: ["'5'"]),
        .usage(
            "fetch --range -1:10", { _ in ["fetch", "--domain", "d", "doc", "--range", "-1:10"] }, mentions: ["--range"]
        ),
        .usage(
            "fetch --range=-1:10", { _ in ["fetch", "--domain", "d", "doc", "--range=-1:10"] }, mentions: ["-1:10"]),
        .usage(
            "fetch --range 1:2:3", { _ in ["fetch", "--domain", "d", "doc", "--range", "1:2:3"] }, mentions: ["1:2:3"]),
        .usage(
            "fetch --range with an overflowing length",
            { _ in ["fetch", "--domain", "d", "doc", "--range", "0:99999999999999999999"] },
            mentions: ["0:99999999999999999999"]),
        .usage(
            "fetch --align 3", { _ in ["fetch", "--domain", "d", "doc", "--range", "0:10", "--align", "3"] },
            mentions: ["--align", "3"]),
        .usage(
            "fetch --align 0", { _ in ["fetch", "--domain", "d", "doc", "--range", "0:10", "--align", "0"] },
            mentions: ["--align", "0"]),
        .usage(
            "fetch --align 2GiB", { _ in ["fetch", "--domain", "d", "doc", "--range", "0:10", "--align", "2GiB"] },
            mentions: ["--align"]),
        .usage(
            "fetch --align without --range", { _ in ["fetch", "--domain", "d", "doc", "--align", "4096"] },
            mentions: ["--align", "--range"]),
        .usage(
            "fetch --force without --out", { _ in ["fetch", "--domain", "d", "doc", "--force"] }, mentions: ["--force"]),
        .usage("fetch without ITEM", { _ in ["fetch", "--domain", "d"] }, mentions: ["<item>"]),
        .usage(
            "§7 fetch without ITEM, with --version VALUE: the missing argument, not the tool's version",
            { _ in ["fetch", "--domain", "d", "--version", "v9"] }, mentions: ["<item>"]),
        .usage(
            "fetch with an unknown flag", { _ in ["fetch", "--domain", "d", "doc", "--offset", "5"] },
            mentions: ["--offset"]),
        // versions
        .engine(
            "versions of an unknown domain", "noSuchItem", { _ in ["versions", "--domain", "nodomain", "doc"] },
            mentions: { _ in ["nodomain"] }),
        .engine(
            "versions of an unknown item", "noSuchItem", { _ in ["versions", "--domain", "d", "nothing"] },
            mentions: { _ in ["nothing"] }),
        .usage("versions without ITEM", { _ in ["versions", "--domain", "d"] }, mentions: ["<item>"]),
        .usage(
            "versions with an unknown flag", { _ in ["versions", "--domain", "d", "doc", "--all"] }, mentions: ["--all"]
        ),
        // stat, verify, sweep
        .usage("stat with an extra argument", { _ in ["stat", "extra"] }, mentions: ["extra"]),
        .usage("stat with an unknown flag", { _ in ["stat", "--verbose"] }, mentions: ["--verbose"]),
        .usage(
            "§7 stat --version: a command's flag it lacks, not the tool's version", { _ in ["stat", "--version"] },
            mentions: ["--version"]),
        .usage("verify with an unknown flag", { _ in ["verify", "--fix"] }, mentions: ["--fix"]),
        .usage("sweep with an unknown flag", { _ in ["sweep", "--force"] }, mentions: ["--force"]),
        .usage("sweep --tmp-grace abc", { _ in ["sweep", "--tmp-grace", "abc"] }, mentions: ["abc", "--tmp-grace"]),
        .usage("--tmp-grace 1y before the command", { _ in ["--tmp-grace", "1y", "stat"] }, mentions: ["1y"]),
        // the command itself
        .usage("an unknown command", { _ in ["frobnicate"] }, mentions: ["frobnicate"]),
    ]

    @Test(
        "§6 §7 bad input: exit code, one line on stderr naming the fault, the JSON error object, the store unchanged",
        arguments: cases)
    func badInput(input: BadInput) throws {
        try withTemporaryDirectory { dir in
            let fixture = try BadInputFixture.make(in: dir)
            let before = try storeFigures(fixture.store)
            let outside = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
            let result = try runCLI(["--store", fixture.store, "--json"] + input.arguments(fixture))
            expectError(result, exit: input.exit, code: input.code, mentions: input.mentions(fixture))
            #expect(try storeFigures(fixture.store) == before, "§6: nothing changes on an error")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: fixture.store + "/tmp") == [], "no temp file left")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == outside,
                "nothing made or removed beside the store")
            #expect(FileManager.default.fileExists(atPath: fixture.folder + "/inner"), "the folder is untouched")
            let doc = try runJSON(fixture.store, ["fetch", "--domain", "d", "doc", "--version", "v1", "--strict"])
            #expect(
                try TestData.read(try doc.string("path"), count: 300_000) == TestData.random(count: 200_000, seed: 111))
        }
    }

    @Test(
        "§7 the same errors without --json: one line on stderr and nothing on stdout",
        arguments: cases.filter {
            [
                "init --chunk-size abc", "put of a missing file", "fetch from an unknown domain",
                "A11 fetch --strict of an unknown version", "fetch --range 5", "fetch --force without --out",
                "§7 put without ITEM, with --version VALUE: the missing argument, not the tool's version",
            ].contains($0.name)
        })
    func badInputWithoutJSON(input: BadInput) throws {
        try withTemporaryDirectory { dir in
            let fixture = try BadInputFixture.make(in: dir)
            let result = try runCLI(["--store", fixture.store] + input.arguments(fixture))
            #expect(result.exitCode == input.exit, "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(
                result.stderr.hasSuffix("\n") && result.stderr.dropLast().split(separator: "\n").count == 1, "\(result)"
            )
            #expect(result.stderr.contains(input.code), "\(result)")
        }
    }

    @Test("§7 the stderr message stays one line when the identifier at fault holds a newline")
    func newlineInIdentifier() throws {
        try withTemporaryDirectory { dir in
            let fixture = try BadInputFixture.make(in: dir)
            for command in [
                ["fetch", "--domain", "d", "bad\nname"], ["versions", "--domain", "d", "bad\nname"],
                ["fetch", "--domain", "no\ndomain", "doc"],
            ] {
                let result = try runCLI(["--store", fixture.store, "--json"] + command)
                expectError(
                    result, exit: 1, code: "noSuchItem",
                    mentions: ["bad", "name"].filter { command.joined().contains($0) })
                #expect(
                    try result.json().object("error").string("message").contains("\n"),
                    "the JSON message keeps the real name")
            }
        }
    }

    @Test("§7 global options before a missing command are not blamed for it")
    func missingCommand() throws {
        try withTemporaryDirectory { dir in
            let result = try runCLI(["--store", dir + "/store", "--json"])
            #expect(!result.terminatedBySignal)
            expectError(result, exit: 64, code: "invalidArgument", mentions: ["no command"])
            #expect(!result.stderr.contains("'--store'"), "--store is a valid option: \(result.stderr)")
        }
    }
}

/// Stores that cannot be used at all: a path under a file, a file as the store, a damaged `data.mdb`.
@Suite("§6 unusable stores")
struct UnusableStoreTests {
    /// Every command, as it would run against a working store.
    static func everyCommand(_ dir: String) -> [[String]] {
        [
            ["init"], ["put", "--domain", "d", "doc", dir + "/input"],
            ["import", dir + "/tree", "--domain", "t", "--copy"],
            ["fetch", "--domain", "d", "doc"], ["fetch", "--domain", "d", "doc", "--range", "0:10"],
            ["fetch", "--domain", "d", "doc", "--out", dir + "/out"], ["versions", "--domain", "d", "doc"], ["stat"],
            ["verify"],
            ["sweep"], ["sweep", "--all"],
        ]
    }

    static func makeInputs(in dir: String) throws {
        try TestData.write(TestData.random(count: 300_000, seed: 121), to: dir + "/input")
        try FileManager.default.createDirectory(atPath: dir + "/tree", withIntermediateDirectories: true)
        try TestData.write([1, 2, 3], to: dir + "/tree/x")
    }

    @Test("§6 a --store under a regular file cannot be created: invalidArgument naming the path, for every command")
    func storeUnderAFile() throws {
        try withTemporaryDirectory { dir in
            try Self.makeInputs(in: dir)
            try TestData.write(Array("not a folder".utf8), to: dir + "/plain")
            for command in Self.everyCommand(dir) {
                let result = try runCLI(["--store", dir + "/plain/store", "--json"] + command)
                expectError(result, exit: 1, code: "invalidArgument", mentions: [dir + "/plain/store", dir + "/plain"])
            }
            #expect(try TestData.read(dir + "/plain", count: 100) == Array("not a folder".utf8))
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        }
    }

    @Test("§6 a --store that is a regular file: invalidArgument naming the path, for every command")
    func storeIsAFile() throws {
        try withTemporaryDirectory { dir in
            try Self.makeInputs(in: dir)
            try TestData.write(Array("not a folder".utf8), to: dir + "/plain")
            for command in Self.everyCommand(dir) {
                let result = try runCLI(["--store", dir + "/plain", "--json"] + command)
                expectError(result, exit: 1, code: "invalidArgument", mentions: [dir + "/plain"])
            }
            #expect(try TestData.read(dir + "/plain", count: 100) == Array("not a folder".utf8))
        }
    }

    /// Makes a store with one item, damages its `data.mdb` with `damage`, then runs every command: each must
    /// fail with `corruptData` naming the store, never crash, and leave the damaged file as it was.
    func expectCorruptData(_ damage: (String) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            try Self.makeInputs(in: dir)
            let store = dir + "/store"
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/input"])
            try damage(store + "/data.mdb")
            let damaged = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            for command in Self.everyCommand(dir) {
                let result = try runCLI(["--store", store, "--json"] + command)
                expectError(result, exit: 1, code: "corruptData", mentions: [store])
            }
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == damaged,
                "nothing rewrote the damaged file")
            #expect(FileManager.default.fileExists(atPath: dir + "/tree/x"), "import left its source alone")
            #expect(!FileManager.default.fileExists(atPath: dir + "/out"))
        }
    }

    @Test("§6 a data.mdb overwritten with random bytes is corruptData for every command")
    func randomDataFile() throws {
        try expectCorruptData { path in
            let size = Int(try TestData.status(path).st_size)
            try TestData.write(TestData.random(count: size, seed: 131), to: path)
        }
    }

    @Test("§6 a data.mdb whose main root points past its last page is corruptData, not transient")
    func rootPastEnd() throws {
        try expectCorruptData { path in
            // lmdb.h's MDB_meta sits after the 16-byte page header of pages 0 and 1; the main database's
            // md_root is at byte 128 of each (16 + 4 magic + 4 version + 8 address + 8 mapsize + 48 free-db
            // record + 40 into the main-db record). Point both at a page far past the end of the file.
            let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
            let fd = open(path, O_RDWR)
            try #require(fd >= 0)
            defer { close(fd) }
            var root = UInt64(1 << 30).littleEndian
            for page in 0..<2 {
                let written = withUnsafeBytes(of: &root) { pwrite(fd, $0.baseAddress, 8, off_t(page * pageSize + 128)) }
                try #require(written == 8)
            }
        }
    }

    @Test("§6 a truncated data.mdb is corruptData, never a crash")
    func truncatedDataFile() throws {
        try expectCorruptData { path in
            let size = try TestData.status(path).st_size
            try #require(truncate(path, size / 2) == 0)
        }
    }
}
