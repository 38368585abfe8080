import CXXHash

/// The blocks of an earlier version of an item, indexed so that a new chunk's bytes can be placed in it: the
/// base a delta is made against (CONTRACT §14).
///
/// The earlier version is split into non-overlapping blocks of ``blockSize`` bytes, each kept as its weak
/// ``RollingChecksum`` and the XXH3-64 of its bytes, never the bytes themselves. It is built by streaming the
/// version once, in order (``append(_:)`` with pieces of any size), as an ingest decodes the previous version's
/// chunks; a trailing piece shorter than a block is counted in ``length`` but not indexed.
///
/// Memory is bounded by the version's size over the block size: about 24 bytes per block (weak checksum 4, strong
/// hash 8, chain link 4, and 4 to 8 of hash-table slot), 4.7 % of the version at the default 512-byte blocks (3 MiB
/// for a 64 MiB version); up to twice that while an array grows, unless the expected length is given. A caller
/// bounding memory for very large versions picks a larger block size for them. Blocks beyond the
/// 2³²−2nd are not indexed (a version of 4 TiB at 1 KiB blocks).
///
/// A value type: build it on one thread, then share it (it is `Sendable`) with the workers that find bases.
public struct BaseIndex: Sendable {
    /// The size of the indexed blocks.
    public let blockSize: Int
    /// The bytes appended so far: the earlier version's length once it is all appended.
    public private(set) var length: Int64 = 0

    /// Per block, in order: its weak checksum, its XXH3-64, and the next block of its hash-table slot plus one
    /// (0 ends the chain).
    private(set) var weak: [UInt32] = []
    private(set) var strong: [UInt64] = []
    private var next: [UInt32] = []
    /// Per hash-table slot, its most recent block plus one (0: empty). A power of two, at least the block count.
    private var heads: [UInt32]
    private var slotShift: Int
    /// The bytes of a block begun by one `append` and not yet completed by the next.
    private var pending: [UInt8] = []

    /// The smallest and largest block sizes: below 64 bytes the index outgrows the version; above 64 KiB too few
    /// blocks fall whole inside a chunk.
    public static let blockSizes = 64...(64 << 10)
    /// The block size ``init(blockSize:expectedLength:)`` uses by default (chosen by `chunkcache-bench deltas`).
    ///
    /// On a series of source tarballs, 512-byte blocks found bases faster than 1 KiB ones (a match after each
    /// changed tar header comes sooner) and stored slightly fewer bytes; 4 KiB blocks stored 16 % more.
    public static let defaultBlockSize = 512
    /// The most blocks indexed: chain links are 32-bit, with 0 for none.
    static let maxBlocks = Int(UInt32.max - 1)

    /// An empty index of blocks of `blockSize` bytes.
    /// - Parameters:
    ///   - blockSize: From 64 bytes to 64 KiB (``blockSizes``).
    ///   - expectedLength: The earlier version's length, when known: the arrays are sized once for it.
    public init(blockSize: Int = defaultBlockSize, expectedLength: Int64 = 0) {
        // A programmer's choice, not outside input: the engine and the bench command pass checked sizes.
        precondition(Self.blockSizes.contains(blockSize), "block size \(blockSize) is not from 64 bytes to 64 KiB")
        self.blockSize = blockSize
        let expectedBlocks = Int(min(max(expectedLength, 0) / Int64(blockSize), Int64(Self.maxBlocks)))
        weak.reserveCapacity(expectedBlocks)
        strong.reserveCapacity(expectedBlocks)
        next.reserveCapacity(expectedBlocks)
        pending.reserveCapacity(blockSize)
        // The smallest power of two that holds the expected blocks, and at least 1024 slots.
        let slots = 1 << max(10, Int.bitWidth - max(expectedBlocks - 1, 0).leadingZeroBitCount)
        heads = [UInt32](repeating: 0, count: slots)
        slotShift = UInt64.bitWidth - slots.trailingZeroBitCount
    }

    /// The number of blocks indexed.
    public var blockCount: Int { weak.count }

    /// Indexes the next `bytes` of the earlier version.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        length += Int64(bytes.count)
        var rest = bytes
        if !pending.isEmpty {
            let taken = min(blockSize - pending.count, rest.count)
            pending.append(contentsOf: rest[..<taken])
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
            guard pending.count == blockSize else { return }
            pending.withUnsafeBytes { addBlock($0) }
            pending.removeAll(keepingCapacity: true)
        }
        while rest.count >= blockSize {
            addBlock(UnsafeRawBufferPointer(rebasing: rest[..<blockSize]))
            rest = UnsafeRawBufferPointer(rebasing: rest[blockSize...])
        }
        pending.append(contentsOf: rest)
    }

    private mutating func addBlock(_ block: UnsafeRawBufferPointer) {
        guard weak.count < Self.maxBlocks else { return }
        if weak.count >= heads.count { growTable() }
        let checksum = RollingChecksum(block).value
        weak.append(checksum)
        strong.append(Self.strongHash(block))
        let slot = self.slot(of: checksum)
        next.append(heads[slot])
        heads[slot] = UInt32(weak.count)
    }

    /// Doubles the hash table and relinks every block, keeping each chain newest first.
    private mutating func growTable() {
        heads = [UInt32](repeating: 0, count: heads.count * 2)
        slotShift -= 1
        for block in weak.indices {
            let slot = self.slot(of: weak[block])
            next[block] = heads[slot]
            heads[slot] = UInt32(block + 1)
        }
    }

    @inline(__always)
    func slot(of checksum: UInt32) -> Int {
        Int(truncatingIfNeeded: (UInt64(checksum) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(slotShift))
    }

    /// The first block of `checksum`'s slot, or nil.
    @inline(__always)
    func firstCandidate(for checksum: UInt32) -> Int? {
        let head = heads[slot(of: checksum)]
        return head == 0 ? nil : Int(head) - 1
    }

    /// The block after `block` in its slot's chain, or nil.
    @inline(__always)
    func nextCandidate(after block: Int) -> Int? {
        let link = next[block]
        return link == 0 ? nil : Int(link) - 1
    }

    /// The strong hash of a block: XXH3-64.
    @inline(__always)
    static func strongHash(_ bytes: UnsafeRawBufferPointer) -> UInt64 { XXH3_64bits(bytes.baseAddress, bytes.count) }
}
