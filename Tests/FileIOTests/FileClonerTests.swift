import FileIO
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A mostly-hole source file: some data at the start, a few bytes in the middle, a megabyte further on, and
/// a tail ending at a length that is not a multiple of any block size.
private let sparseLength: Int64 = (24 << 20) + 123
private let sparsePieces: [(offset: Int64, bytes: [UInt8])] = [
    (0, TestData.random(count: 100 << 10, seed: 20)),
    ((5 << 20) + 7, [1, 2, 3]),
    (12 << 20, TestData.random(count: 1 << 20, seed: 21)),
    (sparseLength - 50, TestData.random(count: 50, seed: 22)),
]

/// Makes the sparse source at `path`.
private func makeSparseSource(at path: String) throws {
    try withNewFile(path) { fd throws in
        try fd.resize(to: sparseLength)
        for piece in sparsePieces { try fd.write(piece.bytes, at: piece.offset) }
    }
}

@Suite struct FileClonerTests {
    /// The strategies that work on any local filesystem: each test body runs once per strategy.
    static let copyingStrategies: [CloneStrategy] = [.copyRange, .readWrite]

    @Test(arguments: copyingStrategies, ScratchFilesystem.all)
    func aForcedStrategyCopiesEveryByteAndKeepsTheHoles(strategy: CloneStrategy, on filesystem: ScratchFilesystem)
        throws
    {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try makeSparseSource(at: dir + "/source")
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    let used = try FileCloner.clone(
                        from: source, to: destination, length: sparseLength, allowed: [strategy])
                    #expect(used == strategy)
                    #expect(try destination.length == sparseLength)
                    #expect(try destination.hasSameBytes(as: source, length: sparseLength))
                    #expect(try destination.dataRanges(length: sparseLength) == source.dataRanges(length: sparseLength))
                    // 24 MiB long, about 1.1 MiB of data: the holes were not filled in.
                    #expect(try destination.allocatedBytes < sparseLength / 8)
                    #expect(try destination.allocatedBytes <= source.allocatedBytes + (64 << 10))
                }
            }
        }
    }

    @Test(arguments: copyingStrategies)
    func aShorterLengthCopiesOnlyThePrefix(strategy: CloneStrategy) throws {
        try withTemporaryDirectory { dir throws in
            let bytes = TestData.random(count: 1 << 20, seed: 23)
            try withNewFile(dir + "/source") { try $0.write(bytes, at: 0) }
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(
                        try FileCloner.clone(from: source, to: destination, length: 300_001, allowed: [strategy])
                            == strategy)
                    #expect(try destination.length == 300_001)
                    #expect(try destination.read(count: 1 << 20, at: 0) == Array(bytes[..<300_001]))
                }
            }
        }
    }

    @Test(arguments: copyingStrategies)
    func aLengthPastTheEndEndsInAHole(strategy: CloneStrategy) throws {
        try withTemporaryDirectory { dir throws in
            let bytes = TestData.random(count: 8192, seed: 24)
            try withNewFile(dir + "/source") { try $0.write(bytes, at: 0) }
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(
                        try FileCloner.clone(from: source, to: destination, length: 4 << 20, allowed: [strategy])
                            == strategy)
                    #expect(try destination.length == 4 << 20)
                    #expect(try destination.dataRanges(length: 4 << 20) == [0..<8192])
                    #expect(try destination.read(count: 8192, at: 0) == bytes)
                }
            }
        }
    }

    @Test(arguments: copyingStrategies)
    func anEmptySourceGivesAnEmptyFile(strategy: CloneStrategy) throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/source") { _ in }
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(
                        try FileCloner.clone(from: source, to: destination, length: 0, allowed: [strategy]) == strategy)
                    #expect(try destination.length == 0)
                }
            }
        }
    }

    @Test(arguments: ScratchFilesystem.all)
    func reflinkAloneThrowsUnsupportedWhereTheFilesystemCannotShareBlocks(on filesystem: ScratchFilesystem) throws {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try makeSparseSource(at: dir + "/source")
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    // ext4 and tmpfs have no `remap_file_range`: FICLONE fails with EOPNOTSUPP.
                    #expect(throws: Errno.notSupported) {
                        try FileCloner.clone(from: source, to: destination, length: sparseLength, allowed: [.reflink])
                    }
                    #expect(try destination.length == 0)  // left as it was
                }
            }
        }
    }

    @Test(arguments: ScratchFilesystem.all)
    func byDefaultTheClonerFallsBackToCopyRangeWithoutReflink(on filesystem: ScratchFilesystem) throws {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try makeSparseSource(at: dir + "/source")
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(try FileCloner.clone(from: source, to: destination, length: sparseLength) == .copyRange)
                    #expect(try destination.hasSameBytes(as: source, length: sparseLength))
                    #expect(try destination.dataRanges(length: sparseLength) == source.dataRanges(length: sparseLength))
                }
            }
        }
    }

    @Test func noStrategyAllowedThrowsUnsupported() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/source") { try $0.write([1, 2, 3], at: 0) }
            try withExistingFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(throws: Errno.notSupported) {
                        try FileCloner.clone(from: source, to: destination, length: 3, allowed: [])
                    }
                }
            }
        }
    }

    @Test func aDestinationOpenedReadOnlyThrowsItsOwnErrorNotUnsupported() throws {
        try withTemporaryDirectory { dir throws in
            try withNewFile(dir + "/source") { try $0.write([1, 2, 3], at: 0) }
            try withNewFile(dir + "/destination") { _ in }
            try withExistingFile(dir + "/source") { source throws in
                try withExistingFile(dir + "/destination") { readOnly throws in
                    let error = try #require(throws: Errno.self) {
                        try FileCloner.clone(from: source, to: readOnly, length: 3)
                    }
                    #expect([Errno.badFileDescriptor, .invalidArgument].contains(error), "\(error)")
                }
            }
        }
    }

    @Test(
        .enabled(
            if: Capabilities.canMountXFS,
            "needs root (getuid() == 0) and mkfs.xfs (xfsprogs) to make and loop-mount an XFS image with reflink"))
    func onXFSTheClonerReflinksAndTheCloneSharesItsExtents() throws {
        try withTemporaryDirectory { dir throws in
            try withReflinkXFS(in: dir) { mount throws in
                let length: Int64 = 4 << 20
                try withNewFile(mount + "/source") { source throws in
                    try source.write(TestData.random(count: Int(length), seed: 30), at: 0)
                    try source.sync()

                    try withNewFile(mount + "/reflink") { clone throws in
                        #expect(try FileCloner.clone(from: source, to: clone, length: length) == .reflink)
                        #expect(try clone.length == length)
                        #expect(try clone.hasSameBytes(as: source, length: length))
                        #expect(try clone.sharedExtents().shared > 0)
                        #expect(try source.sharedExtents().shared > 0)
                    }

                    // FICLONE shares the whole file; the cloner still cuts it to the length asked for.
                    try withNewFile(mount + "/reflink-prefix") { clone throws in
                        #expect(try FileCloner.clone(from: source, to: clone, length: length - 1000) == .reflink)
                        #expect(try clone.length == length - 1000)
                        #expect(try clone.hasSameBytes(as: source, length: length - 1000))
                    }

                    try withNewFile(mount + "/plain") { copy throws in
                        #expect(
                            try FileCloner.clone(from: source, to: copy, length: length, allowed: [.readWrite])
                                == .readWrite)
                        try copy.sync()
                        #expect(try copy.hasSameBytes(as: source, length: length))
                        let extents = try copy.sharedExtents()
                        #expect(extents.shared == 0)
                        #expect(extents.total >= 1)
                    }
                }
            }
        }
    }

    @Test(arguments: ScratchFilesystem.all)
    func theReflinkProbeSaysNoWhereTheFilesystemCannotShareBlocks(on filesystem: ScratchFilesystem) throws {
        try withTemporaryDirectory(in: filesystem.parent) { dir throws in
            try withNewFile(dir + "/source") { source throws in
                try withNewFile(dir + "/destination") { destination throws in
                    #expect(FileCloner.canReflink(from: source, to: destination) == false)
                    #expect(try destination.length == 0)
                }
            }
        }
    }

    @Test(.enabled(if: Capabilities.canMountXFS, "needs root and mkfs.xfs to loop-mount an XFS image with reflink"))
    func theReflinkProbeSaysYesOnXFSAndNoAcrossFilesystems() throws {
        try withTemporaryDirectory { dir throws in
            try withReflinkXFS(in: dir) { mount throws in
                try withNewFile(mount + "/source") { source throws in
                    try withNewFile(mount + "/destination") { destination throws in
                        #expect(FileCloner.canReflink(from: source, to: destination))
                        #expect(try destination.length == 0, "the probe writes nothing")
                    }
                    try withNewFile(dir + "/elsewhere") { elsewhere throws in
                        #expect(FileCloner.canReflink(from: source, to: elsewhere) == false, "EXDEV")
                    }
                }
            }
        }
    }
}
