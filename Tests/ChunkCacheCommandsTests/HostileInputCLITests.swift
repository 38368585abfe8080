import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Input that tries to break the engine, through the CLI: each fails at once with a §6 code naming the thing
/// at fault, never crashes or hangs, and leaves the store as it was.
@Suite("§6 hostile input through the CLI")
struct HostileInputCLITests {
    @Test(
        "import of a directory that contains the store is invalidArgument naming both paths; every domain survives (§6, §8)"
    )
    func importTreeHoldingStore() throws {
        try withTemporaryDirectory { dir in
            let home = dir + "/home"
            let store = home + "/.cache/chunkcache"
            try TestData.write(TestData.random(count: 100_000, seed: 7), to: dir + "/doc")
            try runJSON(store, ["put", "--domain", "kept", "doc", dir + "/doc"])
            let before = try storeFigures(store)
            for given in [home, home + "/.cache", store] {
                let result = try runCLI(["--store", store, "--json", "import", given, "--domain", "x"])
                expectError(result, exit: 1, code: "invalidArgument", mentions: [given, store])
            }
            #expect(try storeFigures(store) == before)
            let doc = try runJSON(store, ["fetch", "--domain", "kept", "doc"])
            #expect(
                try TestData.read(try doc.string("path"), count: 200_000) == TestData.random(count: 100_000, seed: 7))
        }
    }

    @Test(
        "import of a directory that contains the store is refused through a bind mount of the store (device and inode)",
        .enabled(if: getuid() == 0, "bind mounts need root"))
    func importTreeHoldingBindMountedStore() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let tree = dir + "/tree"
            try TestData.write(TestData.random(count: 100_000, seed: 7), to: dir + "/doc")
            try runJSON(store, ["put", "--domain", "kept", "doc", dir + "/doc"])
            try FileManager.default.createDirectory(atPath: tree + "/mnt", withIntermediateDirectories: true)
            try TestData.write([1, 2, 3], to: tree + "/x")
            try runTool("mount", "--bind", store, tree + "/mnt")
            defer { try? runTool("umount", tree + "/mnt") }
            let before = try storeFigures(store)
            let result = try runCLI(["--store", store, "--json", "import", tree, "--domain", "x"])
            expectError(result, exit: 1, code: "invalidArgument", mentions: [tree, store])
            #expect(try storeFigures(store) == before)
            #expect(
                FileManager.default.fileExists(atPath: tree + "/x")
                    && FileManager.default.fileExists(atPath: store + "/data.mdb"))
        }
    }

    @Test("FIFOs hang: put of a FIFO is invalidArgument at once (§6)")
    func putFIFO() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init"])
            try #require(mkfifo(dir + "/fifo", 0o600) == 0)
            let before = try storeFigures(store)
            // A blocking open never returns: the timeout kills the process and fails the test.
            let result = try CLIProcess(["--store", store, "--json", "put", "--domain", "d", "doc", dir + "/fifo"])
                .wait(timeout: 20)
            expectError(result, exit: 1, code: "invalidArgument", mentions: [dir + "/fifo", "FIFO"])
            #expect(try storeFigures(store) == before)
        }
    }

    @Test(
        "SIGILL on huge sizes: put of a sparse file of 2^63−1 bytes is invalidArgument naming the limit, no crash (§6)",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func putHugeSparseFile() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try runJSON(store, ["init"])
            let before = try storeFigures(store)
            // ext4 caps files at 16 TiB; a tmpfs takes a length of Int64.max.
            try FileManager.default.createDirectory(atPath: dir + "/tmpfs", withIntermediateDirectories: false)
            try runTool("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir + "/tmpfs")
            defer { try? runTool("umount", dir + "/tmpfs") }
            let huge = dir + "/tmpfs/huge"
            let fd = open(huge, O_CREAT | O_WRONLY, 0o600)
            try #require(fd >= 0)
            let resized = ftruncate(fd, off_t(Int64.max))
            close(fd)
            try #require(resized == 0, "ftruncate to 2^63−1: \(String(cString: strerror(errno)))")
            let result = try runCLI(["--store", store, "--json", "put", "--domain", "d", "doc", huge])
            expectError(
                result, exit: 1, code: "invalidArgument",
                mentions: [huge, "\(Int64.max) bytes", "1125899906842624 bytes"])
            #expect(try storeFigures(store) == before)
            let plain = try runCLI(["--store", store, "put", "--domain", "d", "doc", huge])
            #expect(!plain.terminatedBySignal && plain.exitCode == 1, "\(plain)")
        }
    }

    /// A store directory whose data.mdb is `contents`: every command is corruptData saying what to do.
    func expectDamagedStore(_ contents: [UInt8], saying what: String) throws {
        try withTemporaryDirectory { dir in
            try UnusableStoreTests.makeInputs(in: dir)
            let store = dir + "/store"
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
            try TestData.write(contents, to: store + "/data.mdb")
            for command in UnusableStoreTests.everyCommand(dir) {
                let result = try runCLI(["--store", store, "--json"] + command)
                expectError(
                    result, exit: 1, code: "corruptData", mentions: [store + "/data.mdb", what, "move data.mdb aside"])
            }
            #expect(try TestData.read(store + "/data.mdb", count: contents.count + 1) == contents, "nothing rewrote it")
            #expect(FileManager.default.fileExists(atPath: dir + "/tree/x"), "import left its source alone")
        }
    }

    @Test("an empty data.mdb is corruptData for every command, not a new store with a 1 MiB map (§6)")
    func emptyDataFile() throws {
        try expectDamagedStore([], saying: "is empty")
    }

    @Test("a data.mdb of 8 KiB of garbage is corruptData for every command, saying what to do (§6)")
    func garbageDataFile() throws {
        try expectDamagedStore(TestData.random(count: 8192, seed: 77), saying: "is not an LMDB file")
    }

    @Test(
        "§2 first opens of one new store by several processes at once all succeed: the empty-file check never sees a store being created"
    )
    func concurrentFirstOpens() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let processes = try (0..<8).map { _ in try CLIProcess(["--store", store, "--json", "stat"]) }
            for result in processes.map({ $0.wait() }) {
                #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            }
            #expect(
                try runJSON(store, ["init"]).int("maxSize") == 1 << 40,
                "created with the default 1 TiB map, not LMDB's 1 MiB")
        }
    }

    @Test(
        "§2 a first open killed (kill -9) at each write, sync and rename of the store's creation never leaves an empty or partial data.mdb: the next open makes the store",
        .enabled(if: Capabilities.path(of: "strace") != nil, "needs strace (Debian: strace)")
    )
    func killedFirstOpens() throws {
        try withTemporaryDirectory { dir in
            let binary = try #require(ChunkCacheBinary.path)
            // strace stops the process with SIGKILL as it enters the call: the Nth of that name, in any thread.
            let calls = ["pwrite64", "pwritev", "fdatasync", "fsync", "msync", "rename", "renameat2"]
            var killed = 0
            for call in calls {
                for nth in 1...3 {
                    let store = dir + "/store-\(call)-\(nth)"
                    let traced = Process()
                    traced.executableURL = URL(fileURLWithPath: try #require(Capabilities.path(of: "strace")))
                    traced.arguments = [
                        "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e",
                        "inject=\(call):signal=KILL:when=\(nth)", binary, "--store", store, "--json", "stat",
                    ]
                    traced.environment = ["SWIFT_BACKTRACE": "enable=no"]
                    traced.standardOutput = FileHandle.nullDevice
                    traced.standardError = FileHandle.nullDevice
                    try traced.run()
                    traced.waitUntilExit()
                    if traced.terminationStatus != 0 { killed += 1 }
                    let after = try runCLI(["--store", store, "--json", "stat"])
                    #expect(after.exitCode == 0 && !after.terminatedBySignal, "killed at \(call) #\(nth): \(after)")
                    #expect(
                        !FileManager.default.fileExists(atPath: store + "/tmp/new-store"),
                        "killed at \(call) #\(nth): the next open removed the killed creation's scratch")
                }
            }
            #expect(killed >= 3, "the kills fell inside the creation (\(killed) of \(calls.count * 3) runs killed)")
        }
    }

    @Test("§2 a creation killed before its rename (a leftover tmp/new-store with an empty data.mdb) is begun again")
    func leftoverCreation() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try FileManager.default.createDirectory(atPath: store + "/tmp/new-store", withIntermediateDirectories: true)
            try TestData.write([], to: store + "/tmp/new-store/data.mdb")
            #expect(try runJSON(store, ["init"]).int("maxSize") == 1 << 40)
            #expect(!FileManager.default.fileExists(atPath: store + "/tmp/new-store"))
            #expect(try TestData.read(store + "/data.mdb", count: 8192).count == 8192, "two whole meta pages")
        }
    }

    @Test("import of an empty path is a usage error and never imports the current directory (§6)")
    func importEmptyPath() throws {
        try withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/cwd", withIntermediateDirectories: false)
            try TestData.write([1, 2, 3], to: dir + "/cwd/precious")
            let result = try runCLI(
                ["--store", dir + "/store", "--json", "import", "", "--domain", "x"], currentDirectory: dir + "/cwd")
            expectError(result, exit: 64, code: "invalidArgument", mentions: ["<directory>"])
            #expect(try TestData.read(dir + "/cwd/precious", count: 10) == [1, 2, 3])
        }
    }

    @Test("put of an empty path is invalidArgument saying the path is empty (§6)")
    func putEmptyPath() throws {
        try withTemporaryDirectory { dir in
            let result = try runCLI(["--store", dir + "/store", "--json", "put", "--domain", "d", "doc", ""])
            expectError(result, exit: 1, code: "invalidArgument", mentions: ["path of the file to store is empty"])
        }
    }

    @Test(
        "import that cannot remove its source reports it: a warning line on stderr, sourceRemovalError in JSON, exit 0 (§8)",
        .enabled(if: getuid() == 0, "chattr +i needs root"))
    func importSourceNotRemovable() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let tree = dir + "/tree"
            try FileManager.default.createDirectory(atPath: tree, withIntermediateDirectories: false)
            try TestData.write([1, 2, 3], to: tree + "/x")
            try TestData.write([4, 5, 6], to: tree + "/locked")
            try runTool("chattr", "+i", tree + "/locked")
            defer { try? runTool("chattr", "-i", tree + "/locked") }
            let result = try runCLI(["--store", store, "--json", "import", tree, "--domain", "d"])
            try #require(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
            let reason = try result.json().string("sourceRemovalError")
            #expect(reason.contains(tree + "/locked") && reason.contains(String(cString: strerror(EPERM))), "\(reason)")
            let lines = result.stderr.split(separator: "\n")
            #expect(
                lines.count == 1 && lines[0].hasPrefix("chunkcache: warning: ") && lines[0].contains(tree)
                    && lines[0].contains(reason), "\(result.stderr)")
            #expect(try runJSON(store, ["fetch", "--domain", "d", "locked"]).string("path").isEmpty == false)

            try FileManager.default.createDirectory(atPath: dir + "/plain", withIntermediateDirectories: false)
            let plain = try runCLI(["--store", store, "--json", "import", dir + "/plain", "--domain", "e"])
            #expect(plain.exitCode == 0 && plain.stderr.isEmpty, "\(plain)")
            #expect(
                try plain.json()["sourceRemovalError"] is NSNull, "the key is there, null, when the source was removed")
        }
    }
}

@Suite("§7 CLI texts")
struct CLITextTests {
    @Test(
        "--help and help COMMAND print the help as text and exit 0, whatever --json says",
        arguments: [
            ["--help"], ["--json", "--help"], ["help"], ["--json", "help"], ["help", "put"], ["--json", "help", "put"],
            ["help", "put", "--json"], ["--store", "/nonexistent/x", "--json", "help", "put"],
            ["--json", "put", "--help"],
            ["put", "--help", "--json"], ["put", "-h"],
        ])
    func helpIsText(arguments: [String]) throws {
        let result = try runCLI(arguments)
        #expect(result.exitCode == 0 && !result.terminatedBySignal, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(result.stdout.hasPrefix("OVERVIEW: ") && !result.stdout.hasPrefix("{"), "\(result.stdout)")
        let names = arguments.filter { !$0.hasPrefix("-") && !$0.hasPrefix("/") && $0 != "help" }
        if !names.isEmpty {
            #expect(result.stdout.contains("USAGE: chunkcache \(names.joined(separator: " "))"), "\(result.stdout)")
        }
    }

    @Test("--help shows durations as the user types them: --tmp-grace defaults to 1h")
    func helpDurations() throws {
        for command in ["put", "stat", "fetch", "import"] {
            let help = try runCLI([command, "--help"]).stdout
            // The option's help wraps at 80 columns; compare with the line breaks folded.
            let folded = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(
                folded.contains(
                    "--tmp-grace <duration> Age at which leftover hand-off files are swept (e.g. 1h, 30m, 0). (default: 1h)"
                ),
                "\(help)")
            #expect(!help.contains("Duration("), "\(help)")
        }
    }

    @Test("human summaries print sizes as people read them; JSON keeps bytes")
    func humanSizes() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(TestData.random(count: 1_400_000, seed: 9), to: dir + "/file")
            let put = try runCLI(["--store", store, "put", "--domain", "d", "doc", dir + "/file", "--version", "v1"])
            try #require(put.exitCode == 0, "\(put)")
            // Random bytes do not compress: 22 chunks stored raw.
            #expect(
                put.stdout
                    == "put d/doc version v1: 1.4 MB, 22 chunks, 22 new, 0 zero, 1.4 MB stored; domain version 1\n",
                "\(put.stdout)")
            let stat = try runCLI(["--store", store, "stat"])
            #expect(stat.stdout.contains("\nlogical 1.4 MB, unique 1.4 MB, stored 1.4 MB, on disk "), "\(stat.stdout)")
            #expect(stat.stdout.contains("(64 KiB chunks)"), "\(stat.stdout)")
            let versions = try runCLI(["--store", store, "versions", "--domain", "d", "doc"])
            #expect(versions.stdout.hasPrefix("v1  1.4 MB  "), "\(versions.stdout)")
            let json = try runJSON(store, ["stat"])
            #expect(try json.int("logicalBytes") == 1_400_000, "JSON keeps exact bytes")
            let fetched = try runJSON(store, ["versions", "--domain", "d", "doc"])
            #expect(try (fetched.array("versions").first as? [String: Any])?.int("size") == 1_400_000)
        }
    }
}
