import FileIO

/// Reads the B-trees of an LMDB data file (`data.mdb`) straight from its pages, without LMDB, for
/// `chunkcache recover`: every page number, header, node offset and length is checked before it is used, so
/// a damaged page loses what it holds (its subtree) and never crashes the reader.
///
/// LMDB trusts its own pages: a changed byte in a branch page sends `mdb_cursor_get` to an address outside
/// the map (SIGSEGV or SIGBUS), and a damaged page type trips an assertion (SIGABRT). A cursor cannot step
/// past such a page, and a damaged meta page stops every open; this reader picks the newest meta page that
/// checks out, walks each tree depth first and skips what fails a check.
///
/// The layout read here is LMDB 0.9's (`mdb.c`, `MDB_DATA_VERSION` 1, 64-bit `pgno_t`):
///
/// - a page starts with `mp_pgno` (8 bytes, the page's own number), `mp_pad` (2), `mp_flags` (2), then
///   `mp_lower` and `mp_upper` (2 each; an overflow page has `mp_pages`, 4, there); `mp_ptrs` follow, one
///   2-byte offset per node;
/// - a node is `mn_lo`, `mn_hi`, `mn_flags`, `mn_ksize` (2 bytes each), its key, then its data; a branch
///   node's child is `mn_lo | mn_hi << 16 | mn_flags << 32`, a leaf's data size `mn_lo | mn_hi << 16`;
///   `F_BIGDATA` data is the number of the first overflow page, whose bytes follow its 16-byte header;
/// - pages 0 and 1 are meta pages: `mm_magic`, `mm_version`, `mm_address`, `mm_mapsize`, two `MDB_db`
///   (free list, main) of 48 bytes — `md_pad` (the page size in the free list's), `md_flags`, `md_depth`,
///   page counts, `md_entries`, `md_root` — then `mm_last_pg` and `mm_txnid`. Named databases are leaf
///   nodes of the main tree with `F_SUBDATA`, their `MDB_db` as data.
///
/// Reads the file as it is: no process may write the store meanwhile. Memory: one page per tree level and
/// one value (at most ``maxValueSize``).
package final class PageFile {
    /// A database's tree: where its root is.
    package struct Tree {
        let name: String
        let root: UInt64
        /// Records the tree held when it was written (`md_entries`), nil for the main tree.
        var entries: UInt64? = nil
    }

    /// A page or record that failed a check, and the keys it held from (hex; empty: the tree's start).
    struct Damage {
        let database: String
        let page: UInt64
        let fromKey: [UInt8]
        let problem: String
    }

    let path: String
    package let pageSize: Int
    /// Pages that may be referenced: those of the file, no more than the meta page's last page + 1.
    package let pageCount: UInt64
    /// The transaction id of the meta page in use.
    let transaction: UInt64
    /// Whether the newest meta page failed its checks and the previous snapshot is read.
    let usedOlderMeta: Bool
    private let file: FileDescriptor
    private let mainRoot: UInt64
    /// Everything skipped so far.
    private(set) var damage: [Damage] = []

    /// The largest value read (a chunk, a manifest page): anything claiming more is damaged.
    package static let maxValueSize = 64 << 20
    private static let maxDepth = 24
    private static let invalidPage = UInt64.max
    private static let magic: UInt32 = 0xBEEF_C0DE
    private static let branchFlag: UInt16 = 0x01, leafFlag: UInt16 = 0x02, overflowFlag: UInt16 = 0x04,
        leaf2Flag: UInt16 = 0x20
    private static let bigData: UInt16 = 0x01, subData: UInt16 = 0x02, dupData: UInt16 = 0x04
    private static let headerSize = 16, nodeHeaderSize = 8

    /// Opens `path` read-only and picks the newest meta page whose main tree's root reads.
    /// - Throws: `corruptData` when neither meta page checks out; the file's errors.
    package init(path: String) throws {
        self.path = path
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly)
        } catch {
            throw CacheError.file(error, path: path, doing: "opening for recovery")
        }
        var ok = false
        defer { if !ok { try? file.close() } }
        let size: Int64
        do { size = Int64(try file.status().st_size) } catch {
            throw CacheError.file(error, path: path, doing: "examining")
        }
        // The page size is in meta page 0; when that page is damaged, the system page size LMDB defaults to.
        var sizes: [Int] = []
        if let first = Self.readBytes(file, at: 0, count: 64), Self.u32(first, 16) == Self.magic {
            let recorded = Int(Self.u32(first, 40))
            if recorded >= 512, recorded <= 65536, recorded & (recorded - 1) == 0 { sizes.append(recorded) }
        }
        for fallback in [ThisProcess.pageSize, 4096] where !sizes.contains(fallback) { sizes.append(fallback) }
        struct Meta {
            let txnid: UInt64
            let lastPage: UInt64
            let mainRoot: UInt64
            let pageSize: Int
        }
        var metas: [Meta] = []
        for pageSize in sizes {
            for index in 0..<2 {
                guard let meta = Self.readBytes(file, at: Int64(index * pageSize), count: 160),
                    Self.u64(meta, 0) == UInt64(index), Self.u16(meta, 10) & 0x08 != 0,
                    Self.u32(meta, 16) == Self.magic, Self.u32(meta, 20) == 1,
                    Int(Self.u32(meta, 16 + 24)) == pageSize
                else { continue }
                let lastPage = Self.u64(meta, 16 + 120)
                let txnid = Self.u64(meta, 16 + 128)
                let root = Self.u64(meta, 16 + 72 + 40)
                guard lastPage >= 1, lastPage < UInt64(size / Int64(pageSize)) + 1 else { continue }
                metas.append(Meta(txnid: txnid, lastPage: lastPage, mainRoot: root, pageSize: pageSize))
            }
            if !metas.isEmpty { break }
        }
        metas.sort { $0.txnid > $1.txnid }
        var chosen: (Meta, Bool)?
        for (rank, meta) in metas.enumerated() {
            let pages = min(UInt64(max(0, size) / Int64(meta.pageSize)), meta.lastPage + 1)
            if meta.mainRoot == Self.invalidPage
                || (meta.mainRoot >= 2 && meta.mainRoot < pages
                    && Self.readPage(file, meta.mainRoot, pageSize: meta.pageSize).map({ Self.isTreePage($0) }) == true)
            {
                chosen = (meta, rank > 0)
                break
            }
        }
        guard let (meta, older) = chosen else {
            throw CacheError(
                .corruptData,
                "the store's data file \(path) has no meta page that checks out, so no record can be found in it; nothing can be recovered from this file"
            )
        }
        pageSize = meta.pageSize
        pageCount = min(UInt64(max(0, size) / Int64(meta.pageSize)), meta.lastPage + 1)
        transaction = meta.txnid
        usedOlderMeta = older
        mainRoot = meta.mainRoot
        self.file = file
        ok = true
    }

    deinit { try? file.close() }

    /// The named database `name`, or nil when the main tree does not hold it (or its entry is damaged,
    /// recorded in ``damage``).
    package func tree(named name: String) -> Tree? {
        let key = Array(name.utf8)
        var found: Tree?
        walk(Tree(name: "the main database", root: mainRoot), from: key, valueFlags: true) { k, v, flags in
            guard k.elementsEqual(key) else { return false }
            if flags & Self.subData != 0, v.count == 48 {
                found = Tree(
                    name: name, root: v.loadUnaligned(fromByteOffset: 40, as: UInt64.self).littleEndian,
                    entries: v.loadUnaligned(fromByteOffset: 32, as: UInt64.self).littleEndian)
            }
            return false
        }
        return found
    }

    /// Calls `visit` with each record of `tree` from the first key at or after `start`, in key order, until it
    /// returns false. Key and value are valid only during the call. Damaged pages and records are skipped
    /// and added to ``damage``. Without `values`, a value kept on overflow pages is not read (`visit` gets
    /// it empty): for counting keys.
    package func walk(
        _ tree: Tree, from start: [UInt8] = [], values: Bool = true,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) rethrows {
        try walk(tree, from: start, valueFlags: false, values: values) { key, value, _ in try visit(key, value) }
    }

    /// The value under `key` in `tree`, copied; nil when absent or damaged.
    func get(_ tree: Tree, key: [UInt8]) -> [UInt8]? {
        var value: [UInt8]?
        walk(tree, from: key) { k, v in
            if k.elementsEqual(key) { value = Array(v) }
            return false
        }
        return value
    }

    private func walk(
        _ tree: Tree, from start: [UInt8], valueFlags: Bool, values: Bool = true,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt16) throws -> Bool
    ) rethrows {
        guard tree.root != Self.invalidPage else { return }  // an empty database
        var overflow: [UInt8] = []
        _ = try walkPage(
            tree, tree.root, level: 0, lower: nil, upper: nil, start: start, values: values, overflow: &overflow, visit)
    }

    /// Walks the subtree at `pgno`, whose keys must lie in [`lower`, `upper`). Returns false once `visit` stops.
    private func walkPage(
        _ tree: Tree, _ pgno: UInt64, level: Int, lower: [UInt8]?, upper: [UInt8]?, start: [UInt8], values: Bool,
        overflow: inout [UInt8],
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt16) throws -> Bool
    ) rethrows -> Bool {
        func skip(_ problem: String) -> Bool {
            damage.append(Damage(database: tree.name, page: pgno, fromKey: lower ?? [], problem: problem))
            return true
        }
        guard level < Self.maxDepth else { return skip("the tree is deeper than any LMDB tree") }
        guard pgno >= 2, pgno < pageCount else {
            return skip("a reference to page \(pgno), outside the file's \(pageCount) pages")
        }
        guard let page = Self.readPage(file, pgno, pageSize: pageSize) else {
            return skip("page \(pgno) cannot be read or does not carry its own number")
        }
        let flags = Self.u16(page, 10) & (Self.branchFlag | Self.leafFlag | Self.overflowFlag | Self.leaf2Flag)
        guard flags == Self.branchFlag || flags == Self.leafFlag else {
            return skip("page \(pgno) is neither a branch nor a leaf page")
        }
        let isLeaf = flags == Self.leafFlag
        guard let nodes = Self.nodes(of: page, leaf: isLeaf, pageSize: pageSize) else {
            return skip("page \(pgno) has a node outside the page")
        }
        guard isLeaf || nodes.count >= 1 else { return skip("branch page \(pgno) has no child") }
        // Keys must rise strictly and stay within the bounds the parent gave: a wrong child number lands on a
        // page of other keys (another tree's, or a freed one) and is refused here.
        var previous: [UInt8]?
        for (index, node) in nodes.enumerated() where isLeaf || index > 0 {
            let key = Array(page[(node + 8)..<(node + 8 + Int(Self.u16(page, node + 6)))])
            if let previous, !previous.lexicographicallyPrecedes(key) {
                return skip("page \(pgno) has keys out of order")
            }
            if let lower, key.lexicographicallyPrecedes(lower) {
                return skip("page \(pgno) holds keys below its parent's range")
            }
            if let upper, !key.lexicographicallyPrecedes(upper) {
                return skip("page \(pgno) holds keys above its parent's range")
            }
            previous = key
        }
        if !isLeaf {
            for index in nodes.indices {
                let node = nodes[index]
                let childUpper = index + 1 < nodes.count ? Self.key(page, nodes[index + 1]) : upper
                // all below start
                if let childUpper, !start.isEmpty, !start.lexicographicallyPrecedes(childUpper) { continue }
                let childLower = index == 0 ? lower : Self.key(page, node)
                let child =
                    UInt64(Self.u16(page, node)) | UInt64(Self.u16(page, node + 2)) << 16 | UInt64(
                        Self.u16(page, node + 4)) << 32
                guard
                    try walkPage(
                        tree, child, level: level + 1, lower: childLower, upper: childUpper, start: start,
                        values: values, overflow: &overflow, visit)
                else { return false }
            }
            return true
        }
        return try page.withUnsafeBytes { bytes in
            for node in nodes {
                let keySize = Int(Self.u16(page, node + 6))
                let nodeFlags = Self.u16(page, node + 4)
                let key = UnsafeRawBufferPointer(rebasing: bytes[(node + 8)..<(node + 8 + keySize)])
                if !start.isEmpty, key.lexicographicallyPrecedes(start) { continue }
                let dataSize = Int(Self.u16(page, node)) | Int(Self.u16(page, node + 2)) << 16
                let dataStart = node + 8 + keySize
                guard nodeFlags & Self.dupData == 0 else {
                    damage.append(
                        Damage(
                            database: tree.name, page: pgno, fromKey: Array(key),
                            problem: "a record on page \(pgno) claims duplicates, which no database of a store has"))
                    continue
                }
                if nodeFlags & Self.bigData != 0, !values {
                    guard try visit(key, UnsafeRawBufferPointer(start: nil, count: 0), nodeFlags) else { return false }
                    continue
                }
                if nodeFlags & Self.bigData != 0 {
                    let first = Self.u64(page, dataStart)
                    guard let problem = readOverflow(first, size: dataSize, into: &overflow) else {
                        guard try overflow.withUnsafeBytes({ try visit(key, $0, nodeFlags) }) else { return false }
                        continue
                    }
                    damage.append(Damage(database: tree.name, page: pgno, fromKey: Array(key), problem: problem))
                    continue
                }
                guard
                    try visit(
                        key, UnsafeRawBufferPointer(rebasing: bytes[dataStart..<(dataStart + dataSize)]), nodeFlags)
                else { return false }
            }
            return true
        }
    }

    /// Reads a value kept on overflow pages into `buffer`; returns what is wrong, or nil when it was read.
    private func readOverflow(_ first: UInt64, size: Int, into buffer: inout [UInt8]) -> String? {
        guard size <= Self.maxValueSize else { return "a value claims \(size) bytes" }
        let pages = UInt64((Self.headerSize + size + pageSize - 1) / pageSize)
        guard first >= 2, first < pageCount, pageCount - first >= pages else {
            return "a value's overflow pages lie outside the file"
        }
        guard let header = Self.readBytes(file, at: Int64(first) * Int64(pageSize), count: Self.headerSize),
            Self.u64(header, 0) == first, Self.u16(header, 10) & Self.overflowFlag != 0,
            UInt64(Self.u32(header, 12)) >= pages
        else { return "overflow page \(first) is not the start of a value of \(size) bytes" }
        buffer = [UInt8](repeating: 0, count: size)
        let read =
            (try? buffer.withUnsafeMutableBytes {
                try file.readAll(fromAbsoluteOffset: Int64(first) * Int64(pageSize) + Int64(Self.headerSize), into: $0)
            }) ?? -1
        guard read == size else { return "overflow page \(first) cannot be read" }
        return nil
    }

    // MARK: - Pages

    /// The node offsets of a branch or leaf page, each checked to lie, with its key (and a leaf's inline
    /// data), inside the page; nil when one does not.
    private static func nodes(of page: [UInt8], leaf: Bool, pageSize: Int) -> [Int]? {
        let lower = Int(u16(page, 12))
        let upper = Int(u16(page, 14))
        guard lower >= headerSize, (lower - headerSize) % 2 == 0, lower <= upper, upper <= pageSize else { return nil }
        var offsets: [Int] = []
        for index in 0..<((lower - headerSize) / 2) {
            let node = Int(u16(page, headerSize + 2 * index))
            guard node >= upper, node + nodeHeaderSize <= pageSize else { return nil }
            let end = node + nodeHeaderSize + Int(u16(page, node + 6))
            guard end <= pageSize else { return nil }
            if leaf {
                let flags = u16(page, node + 4)
                let dataSize = flags & bigData != 0 ? 8 : Int(u16(page, node)) | Int(u16(page, node + 2)) << 16
                guard end + dataSize <= pageSize else { return nil }
            }
            offsets.append(node)
        }
        return offsets
    }

    private static func key(_ page: [UInt8], _ node: Int) -> [UInt8] {
        Array(page[(node + 8)..<(node + 8 + Int(u16(page, node + 6)))])
    }

    private static func isTreePage(_ page: [UInt8]) -> Bool {
        let flags = u16(page, 10) & (branchFlag | leafFlag | overflowFlag | leaf2Flag)
        return (flags == branchFlag || flags == leafFlag)
            && nodes(of: page, leaf: flags == leafFlag, pageSize: page.count) != nil
    }

    /// Page `pgno`, when it can be read whole and starts with its own number.
    private static func readPage(_ file: FileDescriptor, _ pgno: UInt64, pageSize: Int) -> [UInt8]? {
        guard pgno < UInt64(Int64.max / Int64(pageSize)),
            let page = readBytes(file, at: Int64(pgno) * Int64(pageSize), count: pageSize), u64(page, 0) == pgno
        else { return nil }
        return page
    }

    private static func readBytes(_ file: FileDescriptor, at offset: Int64, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let read = (try? bytes.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: offset, into: $0) }) ?? -1
        return read == count ? bytes : nil
    }

    // Little-endian fields; every caller has checked the offset lies inside `bytes`.
    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        guard at >= 0, at + 2 <= bytes.count else { return 0 }
        return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        guard at >= 0, at + 4 <= bytes.count else { return 0 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }
    }

    private static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        guard at >= 0, at + 8 <= bytes.count else { return 0 }
        return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
    }
}
