import FileIO
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The path wrappers: what each does, and the exact `Errno` of each way it fails.
@Suite struct FileSystemTests {
    @Test(
        "E2: a directory watch reports the names touched, created and written in it; touch creates then only sets times"
    )
    func directoryWatchSeesTouches() throws {
        try withTemporaryDirectory { dir throws in
            let watch = try DirectoryWatch.start(dir)
            defer { watch.close() }
            #expect(try watch.drain().isEmpty, "nothing happened yet")
            try FileSystem.touch(dir + "/signal")
            #expect(try FileSystem.status(dir + "/signal").st_size == 0)
            #expect(try watch.drain().contains("signal"), "created")
            try FileSystem.touch(dir + "/signal")
            #expect(try watch.drain() == ["signal"], "a touch of an existing file is one IN_ATTRIB")
            try TestData.write([1], to: dir + "/other")
            #expect(try Set(watch.drain()) == ["other"])
            #expect(throws: Errno.noSuchFile) { try DirectoryWatch.start(dir + "/missing") }
            #expect(throws: Errno.noSuchFile) { try FileSystem.touch(dir + "/missing/x") }
        }
    }

    @Test func linkGivesASecondNameAndNeverReplaces() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1, 2, 3], to: dir + "/a")
            try TestData.write([9], to: dir + "/b")
            try FileSystem.link(dir + "/a", to: dir + "/c")
            #expect(try FileSystem.status(dir + "/a").st_nlink == 2)
            #expect(try TestData.read(dir + "/c", count: 10) == [1, 2, 3])
            #expect(throws: Errno.fileExists) { try FileSystem.link(dir + "/a", to: dir + "/b") }
            #expect(try TestData.read(dir + "/b", count: 10) == [9], "the existing name is untouched")
            #expect(throws: Errno.noSuchFile) { try FileSystem.link(dir + "/missing", to: dir + "/d") }
            #expect(throws: Errno.noSuchFile) { try FileSystem.link(dir + "/a", to: dir + "/no/such/e") }
        }
    }

    @Test func renameReplacesUnlessToldNotTo() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/a")
            try TestData.write([2], to: dir + "/b")
            #expect(throws: Errno.fileExists) { try FileSystem.rename(dir + "/a", to: dir + "/b", options: .noReplace) }
            #expect(try TestData.read(dir + "/b", count: 10) == [2])
            try FileSystem.rename(dir + "/a", to: dir + "/c", options: .noReplace)
            try FileSystem.rename(dir + "/c", to: dir + "/b")
            #expect(try TestData.read(dir + "/b", count: 10) == [1])
            #expect(throws: Errno.noSuchFile) { try FileSystem.rename(dir + "/a", to: dir + "/d") }
            try FileSystem.makeDirectory(dir + "/folder", mode: 0o700)
            #expect(throws: Errno.isDirectory) { try FileSystem.rename(dir + "/b", to: dir + "/folder") }
        }
    }

    @Test func unlinkRemovesAFileButNotAFolder() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/a")
            try FileSystem.unlink(dir + "/a")
            #expect(throws: Errno.noSuchFile) { try FileSystem.status(dir + "/a") }
            #expect(throws: Errno.noSuchFile) { try FileSystem.unlink(dir + "/a") }
            try FileSystem.makeDirectory(dir + "/folder", mode: 0o700)
            #expect(throws: Errno.isDirectory) { try FileSystem.unlink(dir + "/folder") }
        }
    }

    @Test func statusFollowsSymlinksOnlyWhenAsked() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1, 2, 3, 4, 5], to: dir + "/file")
            #expect(symlink(dir + "/file", dir + "/link") == 0)
            #expect(symlink(dir + "/missing", dir + "/dangling") == 0)
            #expect(try FileSystem.status(dir + "/link").st_size == 5)
            #expect(FileKind(mode: try FileSystem.status(dir + "/link").st_mode) == .regular)
            #expect(
                FileKind(mode: try FileSystem.status(dir + "/link", symlinks: .doNotFollow).st_mode) == .symbolicLink)
            #expect(
                FileKind(mode: try FileSystem.status(dir + "/dangling", symlinks: .doNotFollow).st_mode)
                    == .symbolicLink)
            #expect(throws: Errno.noSuchFile) { try FileSystem.status(dir + "/dangling") }
            #expect(throws: Errno.notDirectory) { try FileSystem.status(dir + "/file/inside") }
        }
    }

    @Test func makeDirectoryUsesTheModeAndRefusesAnExistingName() throws {
        try withTemporaryDirectory { dir throws in
            let old = umask(0o022)
            defer { umask(old) }
            try FileSystem.makeDirectory(dir + "/folder", mode: 0o750)
            let st = try FileSystem.status(dir + "/folder")
            #expect(FileKind(mode: st.st_mode) == .directory)
            #expect(st.st_mode & 0o777 == 0o750)
            #expect(throws: Errno.fileExists) { try FileSystem.makeDirectory(dir + "/folder", mode: 0o700) }
            #expect(throws: Errno.noSuchFile) { try FileSystem.makeDirectory(dir + "/no/such", mode: 0o700) }
        }
    }

    @Test func canonicalPathResolvesLinksAndDots() throws {
        try withTemporaryDirectory { dir throws in
            try FileSystem.makeDirectory(dir + "/real", mode: 0o700)
            #expect(symlink(dir + "/real", dir + "/alias") == 0)
            #expect(try FileSystem.canonicalPath(dir + "/alias/../alias/.") == dir + "/real")
            #expect(throws: Errno.noSuchFile) { try FileSystem.canonicalPath(dir + "/missing/..") }
        }
    }

    @Test func checkAccessNamesTheDeniedAccess() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            #expect(chmod(dir + "/file", 0o644) == 0)
            try FileSystem.checkAccess(dir + "/file", for: .exists)
            try FileSystem.checkAccess(dir + "/file", for: [.read, .write])
            // No execute bit for anyone: denied even to root.
            #expect(throws: Errno.permissionDenied) { try FileSystem.checkAccess(dir + "/file", for: .execute) }
            #expect(throws: Errno.noSuchFile) { try FileSystem.checkAccess(dir + "/missing", for: .exists) }
        }
    }

    @Test func filesystemStatusReportsBlocks() throws {
        try withTemporaryDirectory { dir throws in
            let info = try FileSystem.filesystemStatus(dir)
            #expect(info.f_bsize > 0 && info.f_frsize > 0)
            #expect(info.f_bavail <= info.f_blocks)
            #expect(throws: Errno.noSuchFile) { try FileSystem.filesystemStatus(dir + "/missing") }
        }
    }

    @Test func forEachEntryListsNamesAndKindsWithoutDots() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            try FileSystem.makeDirectory(dir + "/folder", mode: 0o700)
            #expect(symlink("file", dir + "/link") == 0)
            #expect(mkfifo(dir + "/fifo", 0o600) == 0)
            var entries: [String: FileKind] = [:]
            try FileSystem.forEachEntry(in: dir) { entries[$0.name] = $0.kind }
            #expect(Set(entries.keys) == ["file", "folder", "link", "fifo"])
            // Filesystems that do not fill d_type say unknown; the temp directory's do.
            if !entries.values.contains(.unknown) {
                #expect(entries == ["file": .regular, "folder": .directory, "link": .symbolicLink, "fifo": .fifo])
            }
            var none = 0
            try FileSystem.forEachEntry(in: dir + "/folder") { _ in none += 1 }
            #expect(none == 0)
            #expect(throws: Errno.noSuchFile) { try FileSystem.forEachEntry(in: dir + "/missing") { _ in } }
            #expect(throws: Errno.notDirectory) { try FileSystem.forEachEntry(in: dir + "/file") { _ in } }
        }
    }

    @Test func forEachEntryPassesOnWhatTheBodyThrows() throws {
        struct Stop: Error {}
        try withTemporaryDirectory { dir throws in
            for name in ["a", "b", "c"] { try TestData.write([1], to: dir + "/" + name) }
            var seen = 0
            #expect(throws: Stop.self) {
                try FileSystem.forEachEntry(in: dir) { _ in
                    seen += 1
                    throw Stop()
                }
            }
            #expect(seen == 1)
        }
    }

    @Test func removeDirectoryRemovesOnlyAnEmptyFolder() throws {
        try withTemporaryDirectory { dir throws in
            try FileSystem.makeDirectory(dir + "/folder", mode: 0o700)
            try TestData.write([1], to: dir + "/folder/file")
            #expect(throws: Errno(rawValue: ENOTEMPTY)) { try FileSystem.removeDirectory(dir + "/folder") }
            #expect(throws: Errno.notDirectory) { try FileSystem.removeDirectory(dir + "/folder/file") }
            try FileSystem.unlink(dir + "/folder/file")
            try FileSystem.removeDirectory(dir + "/folder")
            #expect(throws: Errno.noSuchFile) { try FileSystem.status(dir + "/folder") }
            #expect(throws: Errno.noSuchFile) { try FileSystem.removeDirectory(dir + "/folder") }
        }
    }

    @Test func makeUniqueDirectoryMakesAPrivateNewFolderEachTime() throws {
        try withTemporaryDirectory { dir throws in
            let first = try FileSystem.makeUniqueDirectory(in: dir, prefix: "scratch.")
            let second = try FileSystem.makeUniqueDirectory(in: dir, prefix: "scratch.")
            #expect(first != second)
            for made in [first, second] {
                #expect(made.hasPrefix(dir + "/scratch.") && made.count == (dir + "/scratch.").count + 6)
                let st = try FileSystem.status(made)
                #expect(FileKind(mode: st.st_mode) == .directory)
                #expect(st.st_mode & 0o777 == 0o700)
            }
            try TestData.write([1], to: dir + "/file")
            #expect(throws: Errno.noSuchFile) { try FileSystem.makeUniqueDirectory(in: dir + "/missing", prefix: "x") }
            #expect(throws: Errno.notDirectory) { try FileSystem.makeUniqueDirectory(in: dir + "/file", prefix: "x") }
        }
    }

    @Test func symlinkTargetIsTheLinksTextAsWritten() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            #expect(symlink("file", dir + "/relative") == 0)
            #expect(symlink("../no/such/thing", dir + "/dangling") == 0)
            // The longest text Linux keeps (PATH_MAX less the NUL) comes back whole.
            let long = String(repeating: "d/", count: 2046) + "end"
            #expect(symlink(long, dir + "/long") == 0)
            #expect(try FileSystem.symlinkTarget(dir + "/relative") == "file")
            #expect(try FileSystem.symlinkTarget(dir + "/dangling") == "../no/such/thing")
            #expect(try FileSystem.symlinkTarget(dir + "/long") == long)
            #expect(throws: Errno.invalidArgument) { try FileSystem.symlinkTarget(dir + "/file") }
            #expect(throws: Errno.noSuchFile) { try FileSystem.symlinkTarget(dir + "/missing") }
        }
    }

    @Test func fileKindFromModeMatchesDirectoryEntryTypes() {
        #expect(FileKind(mode: S_IFREG | 0o644) == .regular)
        #expect(FileKind(mode: S_IFDIR | 0o755) == .directory)
        #expect(FileKind(mode: S_IFLNK | 0o777) == .symbolicLink)
        #expect(FileKind(mode: S_IFIFO) == .fifo)
        #expect(FileKind(mode: S_IFSOCK) == .socket)
        #expect(FileKind(mode: S_IFCHR) == .characterDevice)
        #expect(FileKind(mode: S_IFBLK) == .blockDevice)
    }
}

/// Unnamed files, their names, and locks.
@Suite struct UnnamedFileTests {
    @Test func anUnnamedFileHasNoNameUntilLinkedAndThenCannotReplace() throws {
        try withTemporaryDirectory { dir throws in
            let file = try FileDescriptor.openUnnamedFile(in: dir, mode: 0o644)
            try file.closeAfter {
                try file.write(Array("hello".utf8), at: 0)
                var names = 0
                try FileSystem.forEachEntry(in: dir) { _ in names += 1 }
                #expect(names == 0, "an O_TMPFILE file has no directory entry")
                try file.link(to: dir + "/named")
                #expect(try TestData.read(dir + "/named", count: 10) == Array("hello".utf8))
                try TestData.write([7], to: dir + "/taken")
                #expect(throws: Errno.fileExists) { try file.link(to: dir + "/taken") }
                #expect(try TestData.read(dir + "/taken", count: 10) == [7])
                #expect(throws: Errno.noSuchFile) { try file.link(to: dir + "/no/such/name") }
            }
        }
    }

    @Test func anUnnamedFileThatIsNeverLinkedLeavesNothing() throws {
        try withTemporaryDirectory { dir throws in
            let file = try FileDescriptor.openUnnamedFile(in: dir)
            try file.write(TestData.random(count: 100_000, seed: 1), at: 0)
            try file.close()
            var names = 0
            try FileSystem.forEachEntry(in: dir) { _ in names += 1 }
            #expect(names == 0)
        }
    }

    @Test func anUnnamedFileNeedsAFolder() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            #expect(throws: Errno.noSuchFile) { try FileDescriptor.openUnnamedFile(in: dir + "/missing") }
            #expect(throws: Errno.notDirectory) { try FileDescriptor.openUnnamedFile(in: dir + "/file") }
        }
    }

    @Test func anExclusiveLockShutsOutOtherOpenFilesUntilClosed() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            let holder = try FileDescriptor.open(dir + "/file", O_RDONLY)
            let other = try FileDescriptor.open(dir + "/file", O_RDONLY)
            defer { try? other.close() }
            try holder.lock(.exclusive)
            #expect(try other.tryLock(.exclusive) == false)
            #expect(try other.tryLock(.shared) == false)
            try holder.close()
            #expect(try other.tryLock(.exclusive) == true, "closing drops the lock")
            #expect(throws: Errno.badFileDescriptor) { try holder.lock(.exclusive) }
        }
    }

    @Test func writeAllWritesToAPipe() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = FileDescriptor(rawValue: ends[0])
        let writer = FileDescriptor(rawValue: ends[1])
        defer { try? reader.close() }
        let bytes = Array("line\n".utf8)
        try bytes.withUnsafeBytes { try writer.writeAll($0) }
        try writer.close()
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = buffer.withUnsafeMutableBytes { read(reader.rawValue, $0.baseAddress, $0.count) }
        #expect(Array(buffer[..<n]) == bytes)
    }
}

/// Anonymous mappings: usable memory, and gone once their owner is.
@Suite struct AnonymousMappingTests {
    /// Whether every page of `count` bytes at `address` is mapped: `mincore(2)` fails with ENOMEM otherwise.
    static func isMapped(_ address: UInt, count: Int) -> Bool {
        var pages = [UInt8](repeating: 0, count: (count + 4095) / 4096)
        return mincore(UnsafeMutableRawPointer(bitPattern: address), count, &pages) == 0
    }

    @Test func aMappingIsZeroedWritableAndUnmappedWithItsOwner() throws {
        var address: UInt = 0
        do {
            let mapping = try AnonymousMapping(byteCount: 3 << 20)
            #expect(mapping.buffer.count == 3 << 20)
            #expect(mapping.buffer.allSatisfy { $0 == 0 })
            mapping.buffer[12345] = 42
            #expect(mapping.buffer[12345] == 42)
            address = UInt(bitPattern: mapping.buffer.baseAddress)
            #expect(Self.isMapped(address, count: 3 << 20))
        }
        #expect(!Self.isMapped(address, count: 3 << 20), "deinit unmapped it")
    }

    @Test func anEmptyMappingIsInvalidArgument() {
        #expect(throws: Errno.invalidArgument) { _ = try AnonymousMapping(byteCount: 0) }
    }
}
