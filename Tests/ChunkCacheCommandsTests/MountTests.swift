import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// CONTRACT §13: `chunkcache mount`, read by real programs through the real kernel. Each check compares what
/// a program prints through the mount with what the same program prints on the source files.
@Suite(
    "§13 the mount", .serialized,
    .enabled(if: MountProcess.unavailableReason == nil, "\(MountProcess.unavailableReason ?? "")"))
struct MountTests {
    /// A source tree: a 5 MiB random file, text, an empty file, a link, a nested folder, a tarball of part of
    /// it and a SQLite database.
    static func makeTree(at root: String) throws {
        try FileManager.default.createDirectory(atPath: root + "/docs/deep", withIntermediateDirectories: true)
        try TestData.write(TestData.random(count: 5 << 20, seed: 1), to: root + "/big.bin")
        try TestData.write(TestData.text(count: 300_000, seed: 2), to: root + "/docs/notes.txt")
        try TestData.write(TestData.text(count: 70_001, seed: 3), to: root + "/docs/deep/odd.txt")
        try TestData.write([], to: root + "/docs/empty")
        try FileManager.default.createSymbolicLink(atPath: root + "/docs/link", withDestinationPath: "deep/odd.txt")
        try runTool("tar", "-cf", root + "/docs.tar", "-C", root, "docs")
        let made = try shell(
            """
            python3 -c 'import sqlite3, random
            db = sqlite3.connect("\(root)/data.sqlite")
            db.execute("create table t (id integer primary key, k text, v integer)")
            random.seed(7)
            db.executemany("insert into t (k, v) values (?, ?)", [("k%d" % random.randrange(10**6), random.randrange(1000)) for _ in range(20000)])
            db.execute("create index tk on t (k)")
            db.commit()'
            """)
        #expect(made.status == 0, "\(made)")
    }

    /// Imports `tree` as the local domain `d` of a new store and mounts it; `body` gets the store and mount.
    static func withMountedTree(_ body: (_ dir: String, _ store: String, _ mount: MountProcess) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            try makeTree(at: dir + "/src")
            try runJSON(dir + "/store", ["import", dir + "/src", "--domain", "d", "--copy"])
            let mount = try MountProcess(store: dir + "/store", domain: "d", at: dir + "/mnt")
            do {
                try body(dir, dir + "/store", mount)
            } catch {
                _ = try? mount.unmount()
                throw error
            }
            let ended = try mount.unmount()
            #expect(ended.exitCode == 0 && !ended.terminatedBySignal, "the mount ends cleanly: \(ended)")
        }
    }

    /// Runs `script` in `src` and in `mnt` and expects the same output, exit 0.
    static func expectSame(_ script: String, in dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let original = try shell(script, in: dir + "/src")
        let mounted = try shell(script, in: dir + "/mnt")
        #expect(original.status == 0, "on the source: \(script): \(original)", sourceLocation: sourceLocation)
        #expect(mounted.status == 0, "through the mount: \(script): \(mounted)", sourceLocation: sourceLocation)
        #expect(mounted.output == original.output, "\(script)", sourceLocation: sourceLocation)
    }

    @Test(
        "§13: cat, cp, sha256sum, dd with odd block sizes, find, ls -lR, tar -x, python3 mmap and pread, and sqlite3 read a local domain byte-exact"
    )
    func realPrograms() throws {
        try Self.withMountedTree { dir, _, _ in
            try Self.expectSame(
                "sha256sum big.bin docs/notes.txt docs/deep/odd.txt docs/empty data.sqlite docs.tar", in: dir)
            try Self.expectSame("cat docs/link docs/notes.txt | sha256sum", in: dir)
            try Self.expectSame("dd if=big.bin bs=4097 skip=3 count=301 status=none | sha256sum", in: dir)
            try Self.expectSame("dd if=big.bin bs=1000003 skip=2 status=none | sha256sum", in: dir)
            try Self.expectSame("dd if=docs/deep/odd.txt bs=7 skip=9999 status=none | od -c | tail -3", in: dir)
            try Self.expectSame("find . | sort", in: dir)
            try Self.expectSame("find . -type l -printf '%p -> %l\\n' | sort", in: dir)
            // Names, kinds and file sizes (modes, owners, folder sizes and totals differ by design: files are
            // 0444 in the mount, folders have no size, and blocks count what is cached).
            try Self.expectSame(
                "ls -lR --time-style=+ . | awk '/^total/ {next} {k = substr($1, 1, 1); print k, (k == \"d\" ? \"\" : $5), $NF}'",
                in: dir)
            try Self.expectSame("readlink docs/link", in: dir)
            let copied = try shell("cp -r \(dir)/mnt \(dir)/copy && diff -r --no-dereference \(dir)/src \(dir)/copy")
            #expect(copied.status == 0, "cp -r of the mount equals the source: \(copied)")
            let untarred = try shell(
                "mkdir \(dir)/x && tar -xf \(dir)/mnt/docs.tar -C \(dir)/x && diff -r --no-dereference \(dir)/src/docs \(dir)/x/docs"
            )
            #expect(untarred.status == 0, "tar -x from the mounted tarball: \(untarred)")
            try Self.expectSame(
                """
                python3 -c 'import mmap, hashlib, os, random
                f = open("big.bin", "rb"); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                print(hashlib.sha256(m[:]).hexdigest(), len(m))
                random.seed(3); fd = f.fileno()
                print(hashlib.sha256(b"".join(os.pread(fd, random.randrange(1, 200000), random.randrange(0, 5 << 20)) for _ in range(300))).hexdigest())'
                """, in: dir)
            try Self.expectSame(
                "sqlite3 -readonly data.sqlite 'select count(*), sum(v) from t; select v from t where k between \"k5\" and \"k51\" order by id limit 5; pragma integrity_check;'",
                in: dir)
        }
    }

    @Test(
        "§13: a 4 KiB read puts its whole 64 KiB chunk in the kernel's page cache (the file's last page too, though part of one), so the chunk's other pages never reach the mount; the next chunk stays out"
    )
    func readGivesTheKernelItsWholeChunk() throws {
        try Self.withMountedTree { dir, _, _ in
            let path = dir + "/mnt/big.bin"
            let fd = open(path, O_RDONLY)
            try #require(fd >= 0, "open \(path): errno \(errno)")
            defer { close(fd) }
            // No read-ahead: whatever else is resident came from the mount, not from the kernel's guess.
            #expect(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0)
            let page = 4096
            var buffer = [UInt8](repeating: 0, count: page)
            let readAt = 18 * page  // the third page of chunk 1 (pages 16…31)
            #expect(pread(fd, &buffer, page, off_t(readAt)) == page)
            let source = try TestData.read(dir + "/src/big.bin", count: 64 * page)
            #expect(buffer == Array(source[readAt..<(readAt + page)]), "the page read is the source's")
            // The rest of the chunk goes in just after the read is answered.
            var resident: [Bool] = []
            for _ in 0..<200 {
                resident = try Self.residentPages(fd, pages: 64)
                if resident[16..<32].allSatisfy({ $0 }) { break }
                usleep(10_000)
            }
            #expect(resident[16..<32].allSatisfy { $0 }, "chunk 1's 16 pages are in the page cache: \(resident)")
            #expect(!resident[32..<64].contains(true), "chunks 2 and 3 are not: \(resident)")
            #expect(!resident[0..<16].contains(true), "chunk 0 is not: \(resident)")
            // What the kernel holds is the file's bytes: every page of the chunk, read through the cache.
            var chunk = [UInt8](repeating: 0, count: 16 * page)
            #expect(pread(fd, &chunk, chunk.count, off_t(16 * page)) == chunk.count)
            #expect(chunk == Array(source[(16 * page)..<(32 * page)]), "chunk 1 as the kernel serves it")

            // At the file's end the last page is given though part of it: docs/deep/odd.txt is 70,001 bytes, its
            // chunk 1 pages 16 (read) and 17 (4,465 bytes of it).
            let odd = open(dir + "/mnt/docs/deep/odd.txt", O_RDONLY)
            try #require(odd >= 0, "open odd.txt: errno \(errno)")
            defer { close(odd) }
            #expect(posix_fadvise(odd, 0, 0, POSIX_FADV_RANDOM) == 0)
            #expect(pread(odd, &buffer, page, off_t(16 * page)) == page)
            var tail: [Bool] = []
            for _ in 0..<200 {
                tail = try Self.residentPages(odd, pages: 18)
                if tail[17] { break }
                usleep(10_000)
            }
            #expect(tail[16] && tail[17] && !tail[0..<16].contains(true), "the last, part page is in: \(tail)")
            var last = [UInt8](repeating: 0, count: 70_001 - 17 * page)
            #expect(pread(odd, &last, last.count, off_t(17 * page)) == last.count)
            #expect(
                last
                    == Array(
                        try TestData.read(dir + "/src/docs/deep/odd.txt", offset: Int64(17 * page), count: last.count)))
        }
    }

    /// Which of the first `pages` pages of the open file are in the page cache (`mincore` of a mapping).
    static func residentPages(_ fd: Int32, pages: Int) throws -> [Bool] {
        let length = pages * 4096
        let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        try #require(mapped != MAP_FAILED, "mmap: errno \(errno)")
        defer { munmap(mapped, length) }
        var vector = [UInt8](repeating: 0, count: pages)
        try #require(mincore(mapped, length, &vector) == 0, "mincore: errno \(errno)")
        return vector.map { $0 & 1 == 1 }
    }

    @Test("§13: du counts what the store holds; st_blocks of a local file covers its size")
    func diskUsage() throws {
        try Self.withMountedTree { dir, _, _ in
            let used = try shell("du -B1 big.bin | cut -f1", in: dir + "/mnt")
            #expect(used.output == "\(5 << 20)\n", "du of a local file: all of it is in the store: \(used)")
            let blocks = try TestData.status(dir + "/mnt/big.bin").st_blocks
            #expect(blocks == (5 << 20) / 512, "a local file is all cached: \(blocks) blocks")
        }
    }

    @Test(
        "§13: the mount has no ACLs or security labels and says so (EOPNOTSUPP), so ls -lR asks once per mount, not once per file"
    )
    func listingAsksNoAttributesPerFile() throws {
        try Self.withMountedTree { dir, _, _ in
            let mnt = dir + "/mnt"
            for name in ["system.posix_acl_access", "security.selinux", "trusted.x"] {
                let asked = try shell("getfattr --absolute-names -n \(name) \(mnt)/big.bin")
                #expect(asked.status != 0 && asked.output.contains("Operation not supported"), "\(name): \(asked)")
            }
            let other = try shell("getfattr --absolute-names -n user.other \(mnt)/big.bin")
            #expect(other.status != 0 && other.output.contains("No such attribute"), "\(other)")
            // `ls -l` stops asking a device for both after its first EOPNOTSUPP; ENODATA made it ask for each file.
            let traced = try shell("strace -f -c -e trace=getxattr,lgetxattr -o \(dir)/calls ls -lR \(mnt) > /dev/null")
            #expect(traced.status == 0, "\(traced)")
            let calls = try String(contentsOfFile: dir + "/calls", encoding: .utf8)
            let total = calls.split(separator: "\n").filter { $0.contains("getxattr") }
                .compactMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[3]) }.reduce(0, +)
            let files = try shell("find \(mnt) | wc -l").output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(total > 0 && total <= 4, "ls -lR of \(files) entries asked \(total) extended attributes:\n\(calls)")
        }
    }

    @Test(
        "§13: SEEK_DATA and SEEK_HOLE find the file's real holes (its zero chunks) and its end; past the end is ENXIO; a sparse copy reads the same bytes"
    )
    func holes() throws {
        try withTemporaryDirectory { dir in
            // 1 MiB of data, 4 MiB of zeros, 1 MiB of data: whole chunks at every layout up to 1 MiB.
            let mib = 1 << 20
            let data = TestData.random(count: 2 * mib, seed: 22)
            try FileManager.default.createDirectory(atPath: dir + "/src", withIntermediateDirectories: true)
            try TestData.write(
                Array(data[..<mib]) + [UInt8](repeating: 0, count: 4 * mib) + Array(data[mib...]),
                to: dir + "/src/disk.img")
            try runJSON(dir + "/store", ["import", dir + "/src", "--domain", "d", "--copy"])
            let mount = try MountProcess(store: dir + "/store", domain: "d", at: dir + "/mnt")
            let file = dir + "/mnt/disk.img"
            let seeks = try shell(
                """
                python3 -c 'import os
                fd = os.open("\(file)", os.O_RDONLY)
                def at(offset, whence):
                    try: return os.lseek(fd, offset, whence)
                    except OSError as e: return e.strerror
                print([at(0, os.SEEK_HOLE), at(0, os.SEEK_DATA), at(12345, os.SEEK_DATA), at(mib := \(mib), os.SEEK_DATA),
                       at(2 * mib + 7, os.SEEK_HOLE), at(5 * mib, os.SEEK_HOLE), at(6 * mib - 1, os.SEEK_DATA), at(6 * mib, os.SEEK_DATA),
                       at(6 * mib, os.SEEK_HOLE)])'
                """)
            #expect(
                seeks.output.trimmingCharacters(in: .newlines)
                    == "[\(mib), 0, 12345, \(5 * mib), \(2 * mib + 7), \(6 * mib), \(6 * mib - 1), 'No such device or address', 'No such device or address']",
                "\(seeks)")
            let copied = try shell(
                "cp --sparse=always \(file) \(dir)/copy.img && cmp \(file) \(dir)/copy.img && du -B1 \(dir)/copy.img | cut -f1"
            )
            let used = Int(copied.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            #expect(copied.status == 0 && used > 0 && used <= 2 * mib + 64 * 1024, "the copy keeps the hole: \(copied)")
            let ended = try mount.unmount()
            #expect(ended.exitCode == 0, "\(ended)")
        }
    }

    @Test("§13: writes, creates, renames and removals are EROFS; a missing name is ENOENT")
    func readOnly() throws {
        try Self.withMountedTree { dir, _, _ in
            let mnt = dir + "/mnt"
            for script in [
                "touch \(mnt)/new", "mkdir \(mnt)/folder", "rm \(mnt)/big.bin", "mv \(mnt)/big.bin \(mnt)/moved",
                "echo x >> \(mnt)/docs/notes.txt", "ln -s a \(mnt)/l", "truncate -s 0 \(mnt)/big.bin",
            ] {
                let result = try shell(script)
                #expect(
                    result.status != 0 && result.output.contains("Read-only file system"), "\(script): \(result)")
            }
            let missing = try shell("cat \(mnt)/nothing-here")
            #expect(missing.status != 0 && missing.output.contains("No such file or directory"), "\(missing)")
            try Self.expectSame("sha256sum big.bin", in: dir)
        }
    }

    @Test(
        "§13: a read's last-use note, a mark, a pin and a rename keep the file's inode number and the kernel's pages of it; a change of content shows the new bytes"
    )
    func inodesAndPagesLast() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let (old, new) = (TestData.random(count: 4 << 20, seed: 60), TestData.random(count: 4 << 20, seed: 61))
            try TestData.write(old, to: dir + "/old.bin")
            try TestData.write(new, to: dir + "/new.bin")
            try runJSON(store, ["put", "--domain", "d", "file.bin", dir + "/old.bin"])
            let mount = try MountProcess(store: store, domain: "d", at: dir + "/mnt")
            defer { _ = try? mount.unmount() }
            var file = mount.mountPoint + "/file.bin"
            func inode() throws -> String { try shell("stat -c %i \(file)").output }
            // A local file of the same size, read the same way: its pages age on the same lists as the mounted
            // file's. Beside the other suites of a full run (reading gigabytes) the kernel reclaims pages of both:
            // a few pages of the mounted file now and then (2 and 14 of 1024 were seen), never all. A dropped
            // name or an invalidation by the mount drops every page, so the check is that most pages stay, and
            // only while the control, read before the file, kept all of its own.
            let control = dir + "/control.bin"
            try TestData.write(old, to: control)
            func resident(_ path: String) throws -> String {
                try shell("fincore --bytes --noheadings --output RES \(path)").output
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            func readTwice(_ path: String) throws -> String {
                // A second read moves the pages to the kernel's active list, where they outlive one-time reads.
                _ = try shell("cat \(path) > /dev/null")
                return try shell("cat \(path) | sha256sum | cut -d' ' -f1").output
            }
            let whole = 4 << 20
            func expectPagesKept(_ what: Comment) throws {
                let (mounted, local) = (try resident(file), try resident(control))
                guard local == "\(whole)" else { return }
                #expect((Int(mounted) ?? 0) > whole / 2, what)
            }
            let number = try inode()
            // The control first, so its pages are the older ones: the kernel reclaims the older first.
            _ = try readTwice(control)
            #expect(try readTwice(file) == Self.sha256(old) + "\n")
            #expect(try resident(file) == "\(whole)", "the kernel holds the file's pages after a read")
            // The read's last-use note reaches the change log in the background: give it time to land.
            #expect(
                try Self.eventually {
                    try runJSON(store, ["ls", "--domain", "d"]).array("items").contains {
                        ($0 as? [String: Any])?["lastUsedDate"] is String
                    }
                })
            sleep(2)
            #expect(try inode() == number, "a last-use note keeps the inode number")
            try expectPagesKept("a last-use note keeps the pages")
            try runJSON(store, ["mark", "--domain", "d", "file.bin", "--favorite", "1"])
            try runJSON(store, ["pin", "--domain", "d", "file.bin"])
            sleep(1)
            #expect(try inode() == number, "a mark and a pin keep the inode number")
            try expectPagesKept("a mark and a pin keep the pages")
            try runJSON(store, ["mv", "--domain", "d", "file.bin", "--to", "root", "--name", "renamed.bin"])
            file = mount.mountPoint + "/renamed.bin"
            #expect(try Self.eventually { try shell("test -e \(file)").status == 0 })
            #expect(try inode() == number, "a rename keeps the inode number")
            // The identifier stays what it was put as: the rename changed only the name.
            try runJSON(store, ["put", "--domain", "d", "file.bin", dir + "/new.bin"])
            #expect(
                try Self.eventually {
                    try shell("cat \(file) | sha256sum | cut -d' ' -f1").output == Self.sha256(new) + "\n"
                }, "a change of content shows the new bytes, not the kept pages")
        }
    }

    @Test(
        "§13: mounted read-only (ro) by default: another user's write through --allow-other is EROFS, not EACCES, and so is setfattr; -o rw lets setfattr pin"
    )
    func readOnlyByDefault() throws {
        try withTemporaryDirectory { dir in
            // Another user must reach the mount point.
            chmod(dir, 0o755)
            let store = dir + "/store"
            try TestData.write(Array("hello\n".utf8), to: dir + "/a.txt")
            try runJSON(store, ["put", "--domain", "d", "a.txt", dir + "/a.txt"])
            let mount = try MountProcess(store: store, domain: "d", at: dir + "/mnt", arguments: ["--allow-other"])
            let file = mount.mountPoint + "/a.txt"
            let options = try shell("findmnt -n -o OPTIONS \(mount.mountPoint)").output
            #expect(options.split(separator: ",").first == "ro", "\(options)")
            let other = try shell(
                "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cat \(file); echo x >> \(file)'")
            #expect(other.output.hasPrefix("hello\n") && other.output.contains("Read-only file system"), "\(other)")
            let pin = try shell("setfattr -n user.chunkcache.pin -v 1 \(file)")
            #expect(pin.status != 0 && pin.output.contains("Read-only file system"), "\(pin)")
            #expect(try mount.unmount().exitCode == 0)
            let writable = try MountProcess(store: store, domain: "d", at: dir + "/mnt", arguments: ["-o", "rw"])
            defer { _ = try? writable.unmount() }
            let pinned = try shell("setfattr -n user.chunkcache.pin -v 1 \(file)")
            #expect(pinned.status == 0, "-o rw: setfattr pins: \(pinned)")
            let write = try shell("echo x >> \(file)")
            #expect(
                write.status != 0 && write.output.contains("Read-only file system"),
                "-o rw still refuses writes: \(write)")
        }
    }

    @Test(
        "§13: the mount follows other processes' put, mv and rm at once; a file open before a put keeps its version's bytes"
    )
    func followsChanges() throws {
        try Self.withMountedTree { dir, store, _ in
            let mnt = dir + "/mnt"
            let old = TestData.text(count: 300_000, seed: 2)
            let new = TestData.random(count: 200_000, seed: 9)
            try TestData.write(new, to: dir + "/new.bin")
            // Open, read half, put a new version from another process, read the rest from the same open file.
            let script = """
                python3 -c 'import os, sys, time, subprocess, hashlib
                fd = os.open("\(mnt)/docs/notes.txt", os.O_RDONLY)
                first = os.pread(fd, 150000, 0)
                subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
                time.sleep(0.5)
                rest = os.pread(fd, 150000, 150000)
                print(hashlib.sha256(first + rest).hexdigest())
                for _ in range(100):
                    if os.stat("\(mnt)/docs/notes.txt").st_size == 200000: break
                    time.sleep(0.05)
                print(hashlib.sha256(open("\(mnt)/docs/notes.txt", "rb").read()).hexdigest())' \
                \(ChunkCacheBinary.path!) --store \(store) put --domain d docs/notes.txt \(dir)/new.bin
                """
            let result = try shell(script)
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(result.status == 0 && lines.count == 2, "\(result)")
            #expect(lines.first == Self.sha256(old), "the open file kept the version it was opened at")
            #expect(lines.last == Self.sha256(new), "a new open sees the new version")
            try runJSON(store, ["mv", "--domain", "d", "big.bin", "--to", "root", "--name", "renamed.bin"])
            #expect(
                try Self.eventually { try shell("test -e \(mnt)/renamed.bin && ! test -e \(mnt)/big.bin").status == 0 })
            try runJSON(store, ["rm", "--domain", "d", "docs/empty"])
            #expect(try Self.eventually { try shell("! test -e \(mnt)/docs/empty").status == 0 })
            #expect(
                try shell("ls \(mnt)/docs").output.split(separator: "\n").sorted() == ["deep", "link", "notes.txt"])
        }
    }

    /// An nginx on 127.0.0.1 serving `movie.bin` (8 MiB) and `small/a.txt`, the origin domain `web` of a new
    /// store synced from it, and its mount; `body` gets the folder, the store, the server, the mount and the
    /// movie's bytes.
    ///
    /// The mount downloads nothing but what is read (`--fill-below 0`) unless `fillBelow` says otherwise: the
    /// tests that watch what is cached would race a background fill.
    static func withMountedOrigin(
        fillBelow: String = "0", arguments: [String] = [],
        _ body: (_ dir: String, _ store: String, _ server: NginxServer, _ mount: MountProcess, _ movie: [UInt8])
            async throws -> Void
    ) async throws {
        let movie = TestData.random(count: 8 << 20, seed: 20)
        try await withSyncedOrigin(["movie.bin": movie, "small/a.txt": Array("hello\n".utf8)]) { dir, store, server in
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", fillBelow] + arguments)
            do {
                try await body(dir, store, server, mount, movie)
            } catch {
                _ = try? mount.unmount()
                throw error
            }
            let ended = try mount.unmount()
            #expect(ended.exitCode == 0 && !ended.terminatedBySignal, "the mount ends cleanly: \(ended)")
        }
    }

    /// Serves `files` (paths under the origin folder, `dir/origin`) with nginx, as the origin of domain `web` of
    /// a new store (`dir/store`), synced; the server stops when `body` ends, however it ends.
    static func withSyncedOrigin(
        _ files: [String: [UInt8]], _ body: (_ dir: String, _ store: String, _ server: NginxServer) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            for (path, bytes) in files {
                let url = URL(fileURLWithPath: dir + "/origin/" + path)
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try TestData.write(bytes, to: url.path)
            }
            let server = try await NginxServer.start(root: URL(fileURLWithPath: dir + "/origin"))
            let store = dir + "/store"
            do {
                try runJSON(store, ["domain", "add", "web", "--origin", server.baseURL])
                try runJSON(store, ["domain", "sync", "web"])
                try await body(dir, store, server)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    @Test(
        "§13 §10: an origin domain reads cold through the mount byte-exact, 16 readers at once; a second read asks the origin nothing",
        .requires(NginxServer.self))
    func originReads() async throws {
        try await Self.withMountedOrigin { dir, _, server, mount, movie in
            try TestData.write(movie, to: dir + "/expected.bin")
            // 16 processes, each reading its own half-megabyte at an odd offset, all at once.
            let readers = (0..<16).map { index in
                "dd if=\(mount.mountPoint)/movie.bin bs=4099 skip=\(index * 127) count=128 status=none | sha256sum > \(dir)/got.\(index) &"
            }
            let expected = (0..<16).map { index in
                "dd if=\(dir)/expected.bin bs=4099 skip=\(index * 127) count=128 status=none | sha256sum > \(dir)/want.\(index)"
            }
            let ran = try shell((readers + ["wait"] + expected).joined(separator: "\n"))
            #expect(ran.status == 0, "\(ran)")
            for index in 0..<16 {
                let got = try String(contentsOfFile: dir + "/got.\(index)", encoding: .utf8)
                let want = try String(contentsOfFile: dir + "/want.\(index)", encoding: .utf8)
                #expect(got == want, "reader \(index)")
            }
            let whole = try shell("sha256sum < \(mount.mountPoint)/movie.bin; sha256sum < \(dir)/expected.bin")
            let sums = whole.output.split(separator: "\n")
            #expect(sums.count == 2 && sums[0] == sums[1], "\(whole)")
            #expect(try shell("cat \(mount.mountPoint)/small/a.txt").output == "hello\n")
            try await server.clearAccessLog()
            // This file's pages only (`iflag=nocache count=0`): dropping every cache of the machine would take
            // the pages other tests running meanwhile check are kept.
            let again = try shell(
                "dd if=\(mount.mountPoint)/movie.bin iflag=nocache count=0 status=none; sha256sum < \(mount.mountPoint)/movie.bin"
            )
            #expect(again.output.split(separator: "\n").first == sums[0])
            #expect(try await server.accessLog().isEmpty, "every byte is in the store now")
        }
    }

    @Test(
        "§13 §12: user.chunkcache.state goes dataless → partial → pinned → cached; cachedBytes and du follow; setfattr pins and unpins",
        .requires(NginxServer.self))
    func extendedAttributes() async throws {
        try await Self.withMountedOrigin(arguments: ["-o", "rw"]) { _, store, _, mount, movie in
            let file = mount.mountPoint + "/movie.bin"
            func attribute(_ name: String) throws -> String {
                try shell("getfattr --absolute-names --only-values -n user.chunkcache.\(name) \(file)").output
            }
            let state = try attribute("state")
            #expect(state == "dataless", "\(state)")
            #expect(try attribute("cachedBytes") == "0")
            let version = try runJSON(store, ["versions", "--domain", "web", "movie.bin"])
            #expect(
                try attribute("version") == (try version.array("versions").first as? [String: Any])?["contentVersion"]
                    as? String)
            _ = try shell("dd if=\(file) bs=65536 count=1 status=none > /dev/null")
            #expect(try Self.eventually { try attribute("state") == "partial" })
            let listed = try shell("getfattr -d -m - \(file)").output
            #expect(
                listed.contains("user.chunkcache.state=") && listed.contains("user.chunkcache.cachedBytes="),
                "\(listed)")
            let pinned = try shell("setfattr -n user.chunkcache.pin -v 1 \(file)")
            #expect(pinned.status == 0, "\(pinned)")
            #expect(try Self.eventually { try attribute("state") == "pinned" })
            #expect(try attribute("cachedBytes") == String(movie.count))
            #expect(try Self.eventually { try shell("du -B1 \(file) | cut -f1").output == "\(movie.count)\n" })
            let unpinned = try shell("setfattr -n user.chunkcache.pin -v 0 \(file)")
            #expect(unpinned.status == 0, "\(unpinned)")
            #expect(try Self.eventually { try attribute("state") == "cached" })
            let wrong = try shell("setfattr -n user.chunkcache.pin -v maybe \(file)")
            #expect(wrong.status != 0 && wrong.output.contains("Invalid argument"), "\(wrong)")
            let unknown = try shell("getfattr --absolute-names -n user.chunkcache.nothing \(file)")
            #expect(unknown.status != 0 && unknown.output.contains("No such attribute"), "\(unknown)")
        }
    }

    @Test(
        "§12 §13: a pin the bound cannot hold fails (ENOSPC through setfattr, insufficientQuota through pin) and leaves the store exactly as it was: the item unpinned, pinnedBytes the first pin's, a third file still reads",
        .requires(NginxServer.self))
    func failedPinChangesNothing() async throws {
        let (a, b, c) = (
            TestData.random(count: 24 << 20, seed: 50), TestData.random(count: 24 << 20, seed: 51),
            TestData.random(count: 4 << 20, seed: 52)
        )
        try await Self.withSyncedOrigin(["a.bin": a, "b.bin": b, "c.bin": c]) { dir, store, server in
            try runJSON(store, ["init", "--max-size", "32MiB", "--min-free", "0"])
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", "0", "-o", "rw"])
            defer { _ = try? mount.unmount() }
            let mnt = mount.mountPoint
            func state(_ name: String) throws -> String {
                try shell("getfattr --absolute-names --only-values -n user.chunkcache.state \(mnt)/\(name)").output
            }
            let first = try shell("setfattr -n user.chunkcache.pin -v 1 \(mnt)/a.bin")
            let firstState = try state("a.bin")
            #expect(first.status == 0 && firstState == "pinned", "\(first), state \(firstState)")
            let pinnedBefore = try runJSON(store, ["stat"]).int("pinnedBytes")
            #expect(pinnedBefore >= 24 << 20, "the first pin holds its file: \(pinnedBefore)")
            let second = try shell("setfattr -n user.chunkcache.pin -v 1 \(mnt)/b.bin")
            #expect(second.status != 0 && second.output.contains("No space left on device"), "\(second)")
            #expect(try state("b.bin") != "pinned", "a failed pin leaves the item unpinned")
            #expect(try runJSON(store, ["stat"]).int("pinnedBytes") == pinnedBefore)
            func listed(_ name: String) throws -> String? {
                let items = try runJSON(store, ["ls", "--domain", "web"]).array("items") as? [[String: Any]]
                return items?.first { $0["id"] as? String == name }?["metadataVersion"] as? String
            }
            let before = try listed("b.bin")
            let refused = try runCLI(["--store", store, "--json", "pin", "--domain", "web", "b.bin"])
            expectError(refused, exit: 1, code: "insufficientQuota", mentions: [store])
            #expect(try state("b.bin") != "pinned", "a failed pin through the command line leaves it unpinned")
            #expect(try listed("b.bin") == before, "pin through the command line changed nothing")
            #expect(try runJSON(store, ["stat"]).int("pinnedBytes") == pinnedBefore)
            let read = try shell("sha256sum < \(mnt)/c.bin | cut -d' ' -f1")
            #expect(read.output.trimmingCharacters(in: .newlines) == Self.sha256(c), "a third file reads: \(read)")
            // A pin the bound holds but whose download fails (the origin gone) is undone as well.
            try runJSON(store, ["unpin", "--domain", "web", "a.bin"])
            await server.stop()
            let offline = try shell("setfattr -n user.chunkcache.pin -v 1 \(mnt)/b.bin")
            #expect(offline.status != 0, "\(offline)")
            #expect(try state("b.bin") != "pinned", "a pin whose download failed leaves the item unpinned")
            #expect(try runJSON(store, ["stat"]).int("pinnedBytes") == 0)
        }
    }

    @Test(
        "§13 §12: eviction by evict and by the bound reaches st_blocks (du) within a second: a file's blocks count what the store still holds of it",
        .requires(NginxServer.self))
    func diskUsageFollowsEviction() async throws {
        let files = [
            "a.bin": TestData.random(count: 8 << 20, seed: 70), "b.bin": TestData.random(count: 16 << 20, seed: 71),
            "c.bin": TestData.random(count: 16 << 20, seed: 72),
        ]
        try await Self.withSyncedOrigin(files) { dir, store, _ in
            try runJSON(store, ["init", "--max-size", "24MiB", "--min-free", "0"])
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", "0"])
            defer { _ = try? mount.unmount() }
            func blocks(_ name: String) throws -> Int {
                Int(try TestData.status(mount.mountPoint + "/" + name).st_blocks) * 512
            }
            func cached(_ name: String) throws -> Int {
                let asked = "getfattr --absolute-names --only-values -n user.chunkcache.cachedBytes"
                return Int(try shell("\(asked) \(mount.mountPoint)/\(name)").output) ?? -1
            }
            func read(_ name: String) throws { _ = try shell("cat \(mount.mountPoint)/\(name) > /dev/null") }
            try read("a.bin")
            #expect(try Self.eventually { try blocks("a.bin") == 8 << 20 }, "all of it cached")
            try runJSON(store, ["evict", "--domain", "web", "a.bin"])
            #expect(try cached("a.bin") == 0)
            let start = Date()
            #expect(try Self.eventually { try blocks("a.bin") == 0 }, "after evict: \((try? blocks("a.bin")) ?? -1)")
            #expect(Date().timeIntervalSince(start) < 2, "within a second (and a margin for a loaded machine)")
            // By the bound: b.bin and c.bin do not both fit in 24 MiB; whichever the policy evicts from, each
            // file's blocks follow what the store holds of it.
            try read("b.bin")
            #expect(try Self.eventually { try blocks("b.bin") == 16 << 20 })
            try read("c.bin")
            #expect(try cached("b.bin") + cached("c.bin") < 32 << 20, "the bound evicted")
            for name in ["b.bin", "c.bin"] {
                #expect(
                    try Self.eventually { try blocks(name) == (try cached(name) + 511) / 512 * 512 },
                    "\(name) after eviction by the bound: \((try? blocks(name)) ?? -1) bytes of blocks, \((try? cached(name)) ?? -1) cached"
                )
            }
        }
    }

    @Test(
        "§13 §10: a file opened while not all cached and at most --fill-below is hydrated whole in the background, in 2 MiB extents, each one request, no byte asked twice, byte-exact",
        .requires(NginxServer.self))
    func backgroundFill() async throws {
        try await Self.withMountedOrigin(fillBelow: "16MiB") { _, store, server, mount, movie in
            let file = mount.mountPoint + "/movie.bin"
            try await server.clearAccessLog()  // the mount's warm-up request
            _ = try shell("head -c 1 \(file) > /dev/null")
            #expect(
                try Self.eventually {
                    try shell("getfattr --absolute-names --only-values -n user.chunkcache.state \(file)").output
                        == "cached"
                }, "one byte read, the whole file downloaded")
            #expect(Self.cachedBytes(file) == movie.count)
            let ranges = try await Self.gets(of: "movie.bin", server)
            let extent: Int64 = 2 << 20  // ChunkCache.prefetchExtentBytes
            #expect(
                ranges.allSatisfy { $0.lowerBound / extent == ($0.upperBound - 1) / extent },
                "each request within one extent: \(ranges)")
            #expect(ranges.filter { Int64($0.count) == extent }.count >= 3, "\(ranges)")
            #expect(ranges.map(\.count).reduce(0, +) == movie.count, "\(ranges)")
            try await server.clearAccessLog()
            let whole = try runJSON(store, ["fetch", "--domain", "web", "movie.bin"])
            #expect(try TestData.read(try whole.string("path"), count: movie.count + 1) == movie)
            let requests = try await server.accessLog()
            #expect(try whole.int("downloadedBytes") == 0 && requests.isEmpty, "\(requests)")
            unlink(try whole.string("path"))
        }
    }

    /// The byte count `user.chunkcache.cachedBytes` gives for `file`, or -1 when it cannot be read.
    static func cachedBytes(_ file: String) -> Int {
        let value = try? shell("getfattr --absolute-names --only-values -n user.chunkcache.cachedBytes \(file)").output
        return value.flatMap { Int($0) } ?? -1
    }

    /// The ranges of the GETs of `name` in `server`'s access log.
    static func gets(of name: String, _ server: NginxServer) async throws -> [Range<Int64>] {
        try await server.accessLog().filter { $0.method == "GET" && $0.uri.hasSuffix(name) }.compactMap(
            \.requestedBytes)
    }

    @Test(
        "§13 §10: a file above --fill-below that keeps missing at random is hydrated around its misses, the extent growing as they repeat (512 KiB, 1 MiB, 2 MiB)",
        .requires(NginxServer.self))
    func hydrationAroundMisses() async throws {
        try await Self.withMountedOrigin(fillBelow: "1MiB") { dir, _, server, mount, _ in
            let file = mount.mountPoint + "/movie.bin"
            // Four reads, each far from the one before: the 2nd, 3rd and 4th misses of the file's first 8 MiB.
            let script = """
                python3 -c 'import os
                fd = os.open("\(file)", os.O_RDONLY)
                original = open("\(dir)/origin/movie.bin", "rb").read()
                for offset in (0, 6 << 20, 1 << 20, (7 << 20) + (1 << 19)):
                    assert os.pread(fd, 4096, offset) == original[offset:offset + 4096], offset'
                """
            let ran = try shell(script)
            #expect(ran.status == 0, "\(ran)")
            // The first chunk (the first miss), [1 MiB, 2 MiB) (the third), [6 MiB, 8 MiB) (the second and fourth).
            let expected = 65_536 + (1 << 20) + (2 << 20)
            let hydrated = try Self.eventually { Self.cachedBytes(file) == expected }
            let ranges = try await Self.gets(of: "movie.bin", server)
            #expect(hydrated, "\(Self.cachedBytes(file)) bytes cached, from \(ranges)")
            usleep(300_000)
            #expect(Self.cachedBytes(file) == expected, "and no more")
        }
    }

    @Test(
        "§13 §10: a single cold random 4 KiB read of a file above --fill-below downloads its own chunk in one request, and nothing more",
        .requires(NginxServer.self))
    func sparseReadIsOneRequest() async throws {
        try await Self.withMountedOrigin(fillBelow: "1MiB") { _, _, server, mount, movie in
            let file = mount.mountPoint + "/movie.bin"
            try await server.clearAccessLog()
            let offset = (5 << 20) + 3 * 65_536 + 4096
            let read = try shell(
                "python3 -c 'import os, sys; fd = os.open(\"\(file)\", os.O_RDONLY); sys.stdout.buffer.write(os.pread(fd, 4096, \(offset)))' | sha256sum | cut -d' ' -f1"
            )
            #expect(
                read.output.trimmingCharacters(in: .newlines) == Self.sha256(Array(movie[offset..<(offset + 4096)])))
            usleep(500_000)
            let ranges = try await Self.gets(of: "movie.bin", server)
            let chunk = Int64(offset / 65_536 * 65_536)
            #expect(ranges == [chunk..<(chunk + 65_536)], "\(ranges)")
            #expect(Self.cachedBytes(file) == 65_536)
        }
    }

    @Test(
        "§13 §10: the first read of a cold file through a fresh mount needs its GET alone: no HEAD, and the connection it goes on was open before the read",
        .requires(NginxServer.self))
    func firstReadIsItsGetAlone() async throws {
        try await Self.withMountedOrigin { _, _, server, mount, movie in
            let ready = try await server.accessLog()
            let read = try shell(
                "python3 -c 'import os, sys; fd = os.open(\"\(mount.mountPoint)/movie.bin\", os.O_RDONLY); sys.stdout.buffer.write(os.pread(fd, 4096, 0))' | sha256sum | cut -d' ' -f1"
            )
            #expect(read.output.trimmingCharacters(in: .newlines) == Self.sha256(Array(movie[0..<4096])))
            let during = try await server.accessLog().dropFirst(ready.count)
            #expect(during.map(\.method) == ["GET"], "\(during)")
            #expect(
                during.first.map { $0.connectionRequests > 1 } == true,
                "the GET reused a connection the mount opened before it served: \(during), after \(ready)")
        }
    }

    @Test(
        "§13 §12: eviction under an open file never breaks it: the open file reads on, byte-exact, from the origin",
        .requires(NginxServer.self))
    func evictionUnderOpenFile() async throws {
        try await Self.withMountedOrigin { dir, store, _, mount, movie in
            let script = """
                python3 -c 'import os, sys, subprocess, hashlib
                fd = os.open("\(mount.mountPoint)/movie.bin", os.O_RDONLY)
                first = os.pread(fd, 4 << 20, 0)
                subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
                rest = os.pread(fd, 4 << 20, 4 << 20)
                print(hashlib.sha256(first + rest).hexdigest())' \
                \(ChunkCacheBinary.path!) --store \(store) evict --domain web
                """
            let result = try shell(script)
            #expect(result.status == 0, "\(result)")
            #expect(result.output.trimmingCharacters(in: .newlines) == Self.sha256(movie))
            _ = dir
        }
    }

    @Test(
        "§13: an unreachable origin is ETIMEDOUT for bytes not cached, cached bytes still read; once the origin is back reads work again",
        .requires(NginxServer.self))
    func unreachableOrigin() async throws {
        try await Self.withMountedOrigin { dir, _, server, mount, movie in
            let file = mount.mountPoint + "/movie.bin"
            _ = try shell("dd if=\(file) bs=1048576 count=1 status=none > /dev/null")
            await server.stop()
            let cold = try shell(
                "python3 -c 'import os; fd = os.open(\"\(file)\", os.O_RDONLY); os.pread(fd, 65536, 6 << 20)'")
            #expect(cold.status != 0 && cold.output.contains("Connection timed out"), "ETIMEDOUT: \(cold)")
            let warm = try shell("dd if=\(file) bs=65536 count=1 status=none | wc -c")
            #expect(warm.output.trimmingCharacters(in: .whitespacesAndNewlines) == "65536", "cached bytes: \(warm)")
            let back = try await NginxServer.start(root: URL(fileURLWithPath: dir + "/origin"), port: server.port)
            let again = try? shell(
                "python3 -c 'import os, sys; fd = os.open(\"\(file)\", os.O_RDONLY); sys.stdout.buffer.write(os.pread(fd, 65536, 6 << 20))' | sha256sum | cut -d' ' -f1"
            )
            await back.stop()
            #expect(
                again?.output.trimmingCharacters(in: .newlines)
                    == Self.sha256(Array(movie[(6 << 20)..<((6 << 20) + 65536)])))
        }
    }

    /// A `FaultOrigin` serving `movie.bin` (16 MiB) with `behaviour`, as the origin of domain `web` of a new
    /// store (`dir/store`) that has fetched its first byte (so the store knows the file); the origin stops when
    /// `body` ends.
    static func withFaultOrigin(
        behaviour: String, _ body: (_ dir: String, _ store: String, _ origin: FaultOrigin) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/origin", withIntermediateDirectories: true)
            try TestData.write(TestData.random(count: 16 << 20, seed: 21), to: dir + "/origin/movie.bin")
            let origin = try await FaultOrigin.start(root: URL(fileURLWithPath: dir + "/origin"))
            defer { Task { await origin.stop() } }
            let store = dir + "/store"
            try runJSON(store, ["domain", "add", "web", "--origin", origin.baseURL(behaviour: behaviour)])
            try runJSON(store, ["fetch", "--domain", "web", "movie.bin", "--range", "0:1"])
            try await body(dir, store, origin)
        }
    }

    @Test(
        "§13 §10: a mounted read from an origin that accepts the connection and never answers fails ETIMEDOUT after one wait of the domain's --read-timeout, not one per kernel retry",
        .requires(FaultOrigin.self))
    func boundedWaitForASilentOrigin() async throws {
        try await Self.withFaultOrigin(behaviour: "plain") { dir, store, origin in
            // Now the origin takes every request and answers none.
            let set = try runJSON(
                store, ["domain", "set", "web", "--origin", origin.baseURL(behaviour: "stall"), "--read-timeout", "2s"])
            #expect(set["readTimeout"] as? Double == 2, "\(set)")
            let tooShort = try runCLI(["--store", store, "--json", "domain", "set", "web", "--read-timeout", "0.01s"])
            expectError(tooShort, exit: 64, code: "invalidArgument", mentions: ["--read-timeout", "0.1s"])
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", "0"])
            defer { _ = try? mount.unmount() }
            let start = Date()
            let read = try shell(
                "python3 -c 'import os; fd = os.open(\"\(mount.mountPoint)/movie.bin\", os.O_RDONLY); os.pread(fd, 65536, 6 << 20)'"
            )
            let waited = Date().timeIntervalSince(start)
            #expect(read.status != 0 && read.output.contains("Connection timed out"), "ETIMEDOUT: \(read)")
            #expect(waited >= 1.8 && waited < 3.5, "one wait of 2 s, not two: \(waited) s")
            await origin.stop()
        }
    }

    @Test(
        "§13: SIGTERM with a reader inside frees the mount point at once; the reader finishes byte-exact, then the mount exits 0"
    )
    func terminatedWithReaderInside() throws {
        try withTemporaryDirectory { dir in
            try Self.makeTree(at: dir + "/src")
            try runJSON(dir + "/store", ["import", dir + "/src", "--domain", "d", "--copy"])
            let mount = try MountProcess(store: dir + "/store", domain: "d", at: dir + "/mnt")
            // The reader opens the file, reads half, then waits for the go file before reading the rest.
            let reader = try ShellProcess(
                """
                python3 -c 'import os, time, hashlib
                fd = os.open("\(dir)/mnt/big.bin", os.O_RDONLY)
                first = os.pread(fd, 3 << 20, 0)
                open("\(dir)/opened", "w").close()
                while not os.path.exists("\(dir)/go"): time.sleep(0.01)
                print(hashlib.sha256(first + os.pread(fd, 3 << 20, 3 << 20)).hexdigest())'
                """)
            #expect(try Self.eventually { FileManager.default.fileExists(atPath: dir + "/opened") })
            mount.process.send(SIGTERM)
            #expect(try Self.eventually { !MountProcess.isMounted(dir + "/mnt") }, "the mount point is free at once")
            try TestData.write([], to: dir + "/go")
            let read = reader.wait()
            #expect(
                read.output.trimmingCharacters(in: .newlines) == Self.sha256(TestData.random(count: 5 << 20, seed: 1)))
            let ended = mount.process.wait(timeout: 30)
            #expect(ended.exitCode == 0 && !ended.terminatedBySignal, "\(ended)")
        }
    }

    @Test(
        "§13: unmounted while the kernel's read-ahead still waits on the origin, the mount exits 0 at once and prints nothing of libfuse's",
        .requires(FaultOrigin.self))
    func unmountedUnderPendingReads() async throws {
        // Every GET waits 100 ms: the reads the kernel sends ahead of `head` are still waiting when it exits.
        try await Self.withFaultOrigin(behaviour: "slow") { dir, store, origin in
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--fill-below", "0"])
            let head = try shell("head -c 1 \(dir)/mnt/movie.bin | wc -c; fusermount3 -u \(dir)/mnt")
            #expect(head.status == 0 && head.output.hasPrefix("1\n"), "\(head)")
            let ended = mount.process.wait(timeout: 30)
            #expect(ended.exitCode == 0 && !ended.terminatedBySignal, "\(ended)")
            #expect(!ended.stderr.contains("fuse:"), "\(ended)")
            await origin.stop()
        }
    }

    @Test(
        "§13: after kill -9 of the mount, fusermount3 -u clears the mount point, the store verifies clean and mounts again"
    )
    func killedMount() throws {
        try withTemporaryDirectory { dir in
            try Self.makeTree(at: dir + "/src")
            let store = dir + "/store"
            try runJSON(store, ["import", dir + "/src", "--domain", "d", "--copy"])
            let mount = try MountProcess(store: store, domain: "d", at: dir + "/mnt")
            try Self.expectSame("sha256sum big.bin", in: dir)
            mount.process.kill9()
            _ = mount.process.wait()
            let stale = try shell("ls \(dir)/mnt")
            #expect(stale.status != 0 && stale.output.contains("Transport endpoint is not connected"), "\(stale)")
            try runTool("fusermount3", "-u", dir + "/mnt")
            #expect(!MountProcess.isMounted(dir + "/mnt"))
            let verified = try runJSON(store, ["verify"])
            for key in ["corrupt", "damagedVersions", "damagedRecords", "inconsistencies"] {
                #expect(try verified.array(key).isEmpty, "\(key): \(verified)")
            }
            let again = try MountProcess(store: store, domain: "d", at: dir + "/mnt")
            try Self.expectSame("sha256sum big.bin docs/notes.txt", in: dir)
            let ended = try again.unmount()
            #expect(ended.exitCode == 0, "\(ended)")
        }
    }

    @Test(
        "§13 §11: a file replaced at the origin while open never mixes versions (its own bytes, or EIO once the origin has no more of them); --sync-every syncs; a new open sees the new version; a kept listing shows a new file",
        .requires(NginxServer.self))
    func originReplaced() async throws {
        let old = TestData.random(count: 3 << 20, seed: 30)
        let new = TestData.random(count: 2 << 20, seed: 31)
        try await Self.withSyncedOrigin(["doc.bin": old]) { dir, store, _ in
            let mount = try MountProcess(
                store: store, domain: "web", at: dir + "/mnt", arguments: ["--sync-every", "1s"])
            let mnt = mount.mountPoint
            #expect(try shell("ls \(mnt)").output == "doc.bin\n", "the listing, now kept by the kernel")
            // The reader prints what it read of the whole file after the replacement (a short read and then
            // an error when the origin no longer has the rest of its version), and how the reading ended.
            let script = """
                python3 -c 'import os, time, hashlib
                fd = os.open("\(mnt)/doc.bin", os.O_RDONLY)
                got = os.pread(fd, 1 << 20, 0)
                open("\(dir)/opened", "w").close()
                while not os.path.exists("\(dir)/go"): time.sleep(0.01)
                ending = "eof"
                try:
                    while True:
                        more = os.pread(fd, 1 << 20, len(got))
                        if not more: break
                        got += more
                except OSError as error:
                    ending = os.strerror(error.errno)
                print(len(got), hashlib.sha256(got).hexdigest(), ending)'
                """
            let reader = try ShellProcess(script)
            #expect(try Self.eventually { FileManager.default.fileExists(atPath: dir + "/opened") })
            // Replaced at the origin (a new file, renamed over: a new ETag), and a file added beside it.
            try TestData.write(new, to: dir + "/origin/doc.new")
            try FileManager.default.removeItem(atPath: dir + "/origin/doc.bin")
            try FileManager.default.moveItem(atPath: dir + "/origin/doc.new", toPath: dir + "/origin/doc.bin")
            try TestData.write(Array("added\n".utf8), to: dir + "/origin/added.txt")
            #expect(
                try Self.eventually { try shell("cat \(mnt)/added.txt 2>/dev/null").output == "added\n" },
                "--sync-every found the new file; the kept listing was dropped")
            #expect(try shell("ls \(mnt)").output == "added.txt\ndoc.bin\n")
            #expect(
                try shell("sha256sum < \(mnt)/doc.bin | cut -d' ' -f1").output.trimmingCharacters(in: .newlines)
                    == Self.sha256(new), "a new open reads the new version")
            try TestData.write([], to: dir + "/go")
            let read = reader.wait()
            // What the open file read is the old version, all of it (its chunks were cached) or a prefix of it
            // up to an I/O error (its origin no longer serves it): never a byte of the new one.
            let words = read.output.split(separator: " ").map(String.init)
            let count = Int(words.first ?? "") ?? -1
            #expect(read.status == 0 && words.count >= 3 && count >= 1 << 20, "\(read)")
            if count >= 1 << 20 && count <= old.count {
                #expect(words[1] == Self.sha256(Array(old[0..<count])), "\(read)")
                let ending = words[2...].joined(separator: " ").trimmingCharacters(in: .newlines)
                #expect(count == old.count ? ending == "eof" : ending == "Input/output error", "\(read)")
            }
            let ended = try mount.unmount()
            #expect(ended.exitCode == 0, "\(ended)")
        }
    }

    @Test(
        "§13: without --foreground, mount returns once the mount is in place; fusermount3 -u ends its process")
    func background() throws {
        try withTemporaryDirectory { dir in
            try Self.makeTree(at: dir + "/src")
            let store = dir + "/store"
            try runJSON(store, ["import", dir + "/src", "--domain", "d", "--copy"])
            try FileManager.default.createDirectory(atPath: dir + "/mnt", withIntermediateDirectories: true)
            let started = try runJSON(store, ["mount", "--domain", "d", dir + "/mnt"])
            let pid = try started.int("pid")
            #expect(MountProcess.isMounted(dir + "/mnt"), "mounted when the command returns")
            try Self.expectSame("sha256sum big.bin", in: dir)
            try runTool("fusermount3", "-u", dir + "/mnt")
            #expect(try Self.eventually { kill(pid_t(pid), 0) != 0 }, "the background process ended")
            let refused = try runCLI(["--store", store, "--json", "mount", "--domain", "nothing", dir + "/mnt"])
            expectError(refused, exit: 1, code: "noSuchItem", mentions: ["nothing"])
            // §13: a mount point that does not exist is a clear error, in the foreground and the background.
            for foreground in [true, false] {
                let missing = try runCLI(
                    ["--store", store, "--json", "mount", "--domain", "d", dir + "/missing"]
                        + (foreground ? ["--foreground"] : []))
                expectError(missing, exit: 1, code: "invalidArgument", mentions: [dir + "/missing"])
            }
        }
    }

    @Test(
        "§13: without --foreground, the mount's background process holds none of the caller's standard streams and leaves its session: $(chunkcache mount …) returns"
    )
    func backgroundLeavesTheStreams() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            try TestData.write(Array("hello\n".utf8), to: dir + "/a.txt")
            try runJSON(store, ["put", "--domain", "d", "a.txt", dir + "/a.txt"])
            try FileManager.default.createDirectory(atPath: dir + "/mnt", withIntermediateDirectories: true)
            let script = """
                out=$(\(ChunkCacheBinary.path!) --store \(store) --json mount --domain d \(dir)/mnt) || exit 1
                echo "$out"
                """
            let caller = try ShellProcess(script)
            let returned = caller.wait(timeout: 10)
            defer { _ = try? shell("fusermount3 -u \(dir)/mnt") }
            guard let returned else {
                _ = try? shell("fusermount3 -u \(dir)/mnt")
                Issue.record("$(chunkcache mount …) had not returned after 10 s: \(caller.wait())")
                return
            }
            #expect(returned.status == 0, "\(returned)")
            let started = try JSONSerialization.jsonObject(with: Data(returned.output.utf8)) as? [String: Any]
            let pid = try #require(started?["pid"] as? Int, "\(returned)")
            #expect(try shell("cat \(dir)/mnt/a.txt").output == "hello\n")
            let streams = try shell("readlink /proc/\(pid)/fd/0 /proc/\(pid)/fd/1 /proc/\(pid)/fd/2")
            #expect(streams.output == "/dev/null\n/dev/null\n/dev/null\n", "\(streams)")
            let session = try shell("ps -o sid= -p \(pid)").output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(session == String(pid), "the background process leads a session of its own: \(session)")
        }
    }

    @Test("§7 §13: mount --help prints --fill-below's default as a size people read (256 MiB), no Swift value dump")
    func helpPrintsSizes() throws {
        let help = try runCLI(["mount", "--help"])
        #expect(help.exitCode == 0 && help.stdout.contains("(default: 256 MiB)"), "\(help.stdout)")
        for command in ["mount", "init", "fetch", "domain add", "domain set", "changes", "sweep"] {
            let shown = try runCLI(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(
                !shown.stdout.contains("(bytes:") && !shown.stdout.contains("(seconds:"),
                "\(command) --help: \(shown.stdout)")
        }
        // A size as printed is accepted back.
        try withTemporaryDirectory { dir in
            let made = try runJSON(dir + "/store", ["init", "--max-size", "256 MiB", "--min-free", "0"])
            #expect(try made.int("maxSize") == 256 << 20, "\(made)")
        }
    }

    @Test(
        "§13 §6: a damaged chunk is EIO for the reads that need it; the rest of the file and the store keep serving"
    )
    func damagedChunk() throws {
        try withTemporaryDirectory { dir in
            let store = dir + "/store"
            let bytes = TestData.random(count: 1 << 20, seed: 40)
            try TestData.write(bytes, to: dir + "/doc")
            try TestData.write(Array("fine\n".utf8), to: dir + "/other")
            try runJSON(store, ["put", "--domain", "d", "doc", dir + "/doc"])
            try runJSON(store, ["put", "--domain", "d", "other", dir + "/other"])
            // Flip a byte inside the raw chunk at 192 KiB (random bytes are stored as they are).
            var data = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            let needle = Data(bytes[(3 << 16)..<((3 << 16) + 256)])
            let hit = try #require(data.range(of: needle), "the raw chunk is in data.mdb")
            data[hit.lowerBound + 1000] ^= 0x5A
            try TestData.write(Array(data), to: store + "/data.mdb")
            let mount = try MountProcess(store: store, domain: "d", at: dir + "/mnt")
            let mnt = mount.mountPoint
            let bad = try shell("dd if=\(mnt)/doc bs=4096 skip=48 count=1 status=none | wc -c")
            #expect(bad.output.contains("Input/output error"), "the damaged chunk: \(bad)")
            let good = try shell("dd if=\(mnt)/doc bs=65536 count=3 status=none | sha256sum | cut -d' ' -f1")
            #expect(good.output.trimmingCharacters(in: .newlines) == Self.sha256(Array(bytes[0..<(3 << 16)])))
            let after = try shell("dd if=\(mnt)/doc bs=65536 skip=4 status=none | sha256sum | cut -d' ' -f1")
            #expect(after.output.trimmingCharacters(in: .newlines) == Self.sha256(Array(bytes[(4 << 16)...])))
            #expect(try shell("cat \(mnt)/other").output == "fine\n")
            let ended = try mount.unmount()
            #expect(ended.exitCode == 0, "\(ended)")
        }
    }

    /// Whether `condition` holds within 5 seconds (the mount learns of a change as soon as it is committed;
    /// the margin is for a loaded machine).
    static func eventually(_ condition: () throws -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        let path = NSTemporaryDirectory() + "/sha-\(UUID().uuidString)"
        defer { unlink(path) }
        try? TestData.write(bytes, to: path)
        return (try? shell("sha256sum \(path) | cut -d' ' -f1").output.trimmingCharacters(in: .whitespacesAndNewlines))
            ?? ""
    }
}
