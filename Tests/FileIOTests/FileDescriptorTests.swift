import FileIO
import SeededRandom
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct FileDescriptorTests {
    @Test func openingAMissingFileThrowsNoSuchFile() throws {
        try withTemporaryDirectory { dir throws in
            var caught = false
            do {
                _ = try FileDescriptor.open(dir + "/missing", O_RDONLY)
            } catch Errno.noSuchFile {
                caught = true
            }
            #expect(caught)
        }
    }

    @Test func creatingAnExistingFileExclusivelyThrowsFileExists() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/file") { _ in }
            #expect(throws: Errno.fileExists) { try FileDescriptor.open(dir + "/file", O_RDWR | O_CREAT | O_EXCL) }
        }
    }

    @Test func newFilesGetTheRequestedMode() throws {
        try withTemporaryDirectory { dir throws in
            let fd = try FileDescriptor.open(dir + "/file", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            let mode = try fd.closeAfter { try fd.status().st_mode }
            #expect(mode & 0o777 == 0o600)
        }
    }

    @Test(arguments: [Int64(0), 1, 4095, 4096, 1 << 20, 5_000_000_001])
    func bytesWrittenAtAnOffsetReadBackAtThatOffset(offset: Int64) throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/file") { fd throws in
                let bytes = TestData.random(count: 10_000, seed: UInt64(offset))
                try fd.write(bytes, at: offset)
                #expect(try fd.length == offset + 10_000)
                #expect(try fd.read(count: 10_000, at: offset) == bytes)
                #expect(try fd.read(count: 100, at: offset + 9_950) == Array(bytes[9_950...]))  // short at EOF
                #expect(try fd.read(count: 100, at: offset + 10_000) == [])
                if offset > 0 {
                    #expect(try fd.read(count: Int(min(offset, 4096)), at: 0).allSatisfy { $0 == 0 })
                }
            }
        }
    }

    /// More vectors than one `pwritev` takes (IOV_MAX, 1024), some of them empty, and all-empty lists.
    @Test(arguments: [0, 1, 1023, 1024, 1025, 3000])
    func vectoredWritesArriveWholeAndInOrder(count: Int) throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/file") { fd throws in
                var rng = SplitMix64(seed: UInt64(count))
                let pieces = (0..<count).map { index in
                    index % 7 == 3
                        ? [] : TestData.random(count: Int.random(in: 1...700, using: &rng), seed: UInt64(index))
                }
                let expected = pieces.flatMap { $0 }
                let buffers = pieces.map { piece in
                    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(piece.count, 1), alignment: 1)
                    buffer.copyBytes(from: piece)
                    return buffer
                }
                defer { for buffer in buffers { buffer.deallocate() } }
                let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: max(count, 1))
                defer { vectors.deallocate() }
                for (index, piece) in pieces.enumerated() {
                    vectors[index] = iovec(iov_base: buffers[index].baseAddress, iov_len: piece.count)
                }
                try fd.writeAll(
                    toAbsoluteOffset: 4096, vectors: UnsafeMutableBufferPointer(rebasing: vectors[..<count]))
                #expect(try fd.length == (expected.isEmpty ? 0 : 4096 + Int64(expected.count)))
                #expect(try fd.read(count: expected.count, at: 4096) == expected)
            }
        }
    }

    @Test func aLargeWriteArrivesWhole() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/file") { fd throws in
                let bytes = TestData.random(count: 3 << 20 | 123, seed: 7)
                try fd.write(bytes, at: 17)
                #expect(try fd.read(count: bytes.count, at: 17) == bytes)
                let written = try fd.read(count: 17 + bytes.count, at: 0)
                #expect(written.count == 17 + bytes.count)
            }
        }
    }

    @Test func readingDoesNotMoveAnythingTheNextReadSees() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/file") { fd throws in
                try fd.write(Array("0123456789".utf8), at: 0)
                #expect(try fd.read(count: 4, at: 3) == Array("3456".utf8))
                #expect(try fd.read(count: 4, at: 3) == Array("3456".utf8))
                #expect(try fd.read(count: 2, at: 0) == Array("01".utf8))
            }
        }
    }

    @Test(arguments: ScratchFilesystem.all)
    func growingAFileLeavesAHoleAndShrinkingCutsIt(on filesystem: ScratchFilesystem) throws {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try withNewFile(dir + "/file") { fd throws in
                let block = try fd.blockSize
                let head = TestData.random(count: 4096, seed: 8)
                try fd.write(head, at: 0)
                try fd.resize(to: 64 << 20)
                #expect(try fd.length == 64 << 20)
                #expect(try fd.allocatedBytes < 1 << 20)  // 64 MiB long, almost nothing on disk
                #expect(try fd.dataRanges(length: 64 << 20) == [0..<roundUp(4096, block)])
                #expect(try fd.read(count: 1 << 20, at: 32 << 20).allSatisfy { $0 == 0 })
                #expect(try fd.read(count: 4096, at: 0) == head)

                try fd.resize(to: 100)
                #expect(try fd.length == 100)
                #expect(try fd.read(count: 4096, at: 0) == Array(head[..<100]))
                try fd.resize(to: 0)
                #expect(try fd.dataRanges(length: 1 << 20) == [])
            }
        }
    }

    @Test(arguments: ScratchFilesystem.all, [false, true])
    func dataRangesAreTheWrittenBlocksAndSkipHoles(on filesystem: ScratchFilesystem, synced: Bool) throws {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try withNewFile(dir + "/sparse") { fd throws in
                let length: Int64 = 16 << 20
                let block = try fd.blockSize
                try fd.resize(to: length)
                let first: Range<Int64> = (1 << 20) + 100..<(1 << 20) + 110
                let second: Range<Int64> = (8 << 20) - 5..<(8 << 20) + 8192
                try fd.write([UInt8](repeating: 1, count: first.count), at: first.lowerBound)
                try fd.write(TestData.random(count: second.count, seed: 9), at: second.lowerBound)
                if synced { try fd.sync() }

                let expected = [first, second].map { roundDown($0.lowerBound, block)..<roundUp($0.upperBound, block) }
                #expect(try fd.dataRanges(length: length) == expected)
                // Asking for less cuts the ranges at `length`.
                #expect(try fd.dataRanges(length: 2 << 20) == [expected[0]])
                #expect(
                    try fd.dataRanges(length: first.lowerBound + 1) == [expected[0].lowerBound..<first.lowerBound + 1])
                #expect(try fd.dataRanges(length: 1 << 20) == [])
                // The holes read as zeros, the data as written.
                #expect(try fd.read(count: 4096, at: 4 << 20).allSatisfy { $0 == 0 })
                #expect(
                    try fd.read(count: first.count, at: first.lowerBound) == [UInt8](repeating: 1, count: first.count))
            }
        }
    }

    @Test func aDenseFileIsOneDataRange() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/dense") { fd throws in
                try fd.write(TestData.random(count: 300_001, seed: 10), at: 0)
                #expect(try fd.dataRanges(length: 300_001) == [0..<300_001])
            }
        }
    }

    @Test func aPlainCopyHasNoSharedExtents() throws {
        try withTemporaryDirectory { dir throws in
            let bytes = TestData.random(count: 1 << 20, seed: 11)
            try withNewFile(dir + "/original") { fd in try fd.write(bytes, at: 0) }
            try withNewFile(dir + "/copy") { copy throws in
                try withExistingFile(dir + "/original") { original throws in
                    #expect(
                        try FileCloner.clone(from: original, to: copy, length: 1 << 20, allowed: [.readWrite])
                            == .readWrite)
                    try copy.sync()
                    let extents = try copy.sharedExtents()
                    #expect(extents.shared == 0)
                    #expect(extents.total >= 1)
                    #expect(try original.sharedExtents().shared == 0)
                }
            }
            try withNewFile(dir + "/empty") { empty throws in
                let extents = try empty.sharedExtents()
                #expect(extents.shared == 0 && extents.total == 0)
            }
        }
    }

    @Test func closeAfterClosesTheDescriptorEvenWhenTheBodyThrows() throws {
        struct Stop: Error {}
        try withTemporaryDirectory { dir throws in
            let path = dir + "/file"
            let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL)
            #expect(openTarget(of: fd) == path)
            #expect(throws: Stop.self) { try fd.closeAfter { throw Stop() } }
            // Other tests run alongside and may reuse the number at once: only check it no longer names our file.
            #expect(openTarget(of: fd) != path)
        }
    }

    /// The path `/proc/self/fd` shows for `fd`, or `nil` when it is not open.
    private func openTarget(of fd: FileDescriptor) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd.rawValue)", &buffer, buffer.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

@Suite struct ErrnoTests {
    @Test func patternsMatchTheirOwnNumberOnly() {
        #expect(Errno.noSuchFile ~= Errno(rawValue: ENOENT) as any Error)
        #expect(!(Errno.noSuchFile ~= Errno.fileExists as any Error))
        struct Other: Error {}
        #expect(!(Errno.noSuchFile ~= Other() as any Error))
    }

    @Test func descriptionIsTheSystemsText() {
        #expect(Errno.noSuchFile.description == "No such file or directory")
        #expect(Errno.crossDevice.description == "Invalid cross-device link")
    }
}

// MARK: - Status flags and open folders

extension FileDescriptorTests {
    @Test func setBlockingClearsAndSetsOnlyNonBlock() throws {
        try withTemporaryDirectory { dir throws in
            try TestData.write([1], to: dir + "/file")
            let file = try FileDescriptor.open(dir + "/file", O_RDONLY | O_NONBLOCK | O_APPEND)
            try file.closeAfter {
                try file.setBlocking(true)
                #expect(fcntl(file.rawValue, F_GETFL) & (O_NONBLOCK | O_APPEND) == O_APPEND)
                try file.setBlocking(true)  // already blocking: nothing changes
                #expect(fcntl(file.rawValue, F_GETFL) & (O_NONBLOCK | O_APPEND) == O_APPEND)
                try file.setBlocking(false)
                #expect(fcntl(file.rawValue, F_GETFL) & (O_NONBLOCK | O_APPEND) == O_NONBLOCK | O_APPEND)
            }
            #expect(throws: Errno.badFileDescriptor) { try file.setBlocking(true) }
        }
    }

    @Test func forEachEntryListsTheOpenFolderEvenAfterItsPathChanges() throws {
        try withTemporaryDirectory { dir throws in
            try FileSystem.makeDirectory(dir + "/listed", mode: 0o700)
            try TestData.write([1], to: dir + "/listed/inside")
            let folder = try FileDescriptor.open(dir + "/listed", O_RDONLY | O_DIRECTORY)
            try folder.closeAfter {
                // Swap the path for another folder: the open descriptor still lists the first one.
                try FileSystem.rename(dir + "/listed", to: dir + "/moved")
                try FileSystem.makeDirectory(dir + "/listed", mode: 0o700)
                try TestData.write([2], to: dir + "/listed/impostor")
                for _ in 0..<2 {  // a second listing starts from the first entry again
                    var names: [String] = []
                    try folder.forEachEntry { names.append($0.name) }
                    #expect(names == ["inside"])
                }
                #expect(try folder.status().st_nlink == 2, "the caller's descriptor is still open and usable")
            }
            let file = try FileDescriptor.open(dir + "/moved/inside", O_RDONLY)
            try file.closeAfter {
                #expect(throws: Errno.notDirectory) { try file.forEachEntry { _ in } }
            }
        }
    }
}
