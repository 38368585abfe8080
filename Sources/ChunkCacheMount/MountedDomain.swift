import ChunkCache
import FileIO
import FuseKit
import Synchronization

/// One domain of a store as a read-only file system (CONTRACT §13): the FUSE operations, answered from the
/// catalogue and the chunks.
///
/// Where the work runs: each request is answered on the FUSE session thread that received it, as a caller
/// of the engine's blocking API that owns its thread (LMDB reads, zstd decoding: the session's threads are
/// the mount's blocking home). A read whose bytes must come from the origin, and a pin, are handed to a
/// task that answers the request when done: no session thread waits for the network.
public final class MountedDomain: FuseFilesystem {
    let cache: ChunkCache
    let domain: String
    let nodes = NodeTable()
    let files = Handles<OpenFile>()
    let timedOut = TimedOutReads()
    let folders = Handles<OpenFolder>()
    let buffers: ReadBuffers
    let fill: BackgroundFill
    /// Where the rest of each chunk a read decoded goes: the kernel's page cache.
    let pages = KernelPageCache()
    /// The store's chunk size: reads widen to whole chunks.
    let chunkSize: Int
    let owner = (userID: ThisProcess.userID, groupID: ThisProcess.groupID)
    /// Whether eviction may drop the files' cached bytes (an origin domain): their `st_blocks` can shrink with
    /// no change to the catalogue.
    let evictable: Bool
    /// Whether the mount teaches traces and starts their prefetches: for an origin domain only, where a
    /// prediction saves downloads (CONTRACT §15).
    var learns: Bool { evictable }
    /// How long the kernel may trust names and attributes: long, because the mount tells it of every
    /// change (``ChangeFollower``).
    static let timeout: Double = 24 * 3600
    /// Entries per listing page read from the catalogue.
    static let pageSize = 500
    /// The largest read the kernel sends (FUSE's 256 pages).
    static let maxRead = 1 << 20

    /// Serves `domain` of `cache`; files opened cold that are at most `fillBelow` bytes are downloaded whole
    /// in the background (``BackgroundFill``). `evictable`: the domain has an origin, so eviction may drop
    /// what the store holds of its files at any time.
    public init(_ cache: ChunkCache, domain: String, fillBelow: Int64, evictable: Bool = false) {
        self.cache = cache
        self.domain = domain
        self.evictable = evictable
        self.buffers = ReadBuffers(size: Self.maxRead, kept: 16)
        self.fill = BackgroundFill(cache, limit: fillBelow)
        self.chunkSize = cache.layout.chunkSize
    }

    public func configure(_ connection: inout FuseConnection) {
        // Sequential readers get the kernel's read-ahead in 1 MiB requests, several in flight.
        connection.maxReadahead = UInt32(Self.maxRead * 4)
        connection.maxBackground = 64
        connection.wanted |=
            FuseCapabilities.asyncRead | FuseCapabilities.readdirPlus | FuseCapabilities.parallelDirectoryOperations
            | FuseCapabilities.cacheSymlinks | FuseCapabilities.explicitInvalidateData
        // Pages are dropped when the change log says the file changed, not on every new modification time.
        connection.wanted &= ~(FuseCapabilities.readdirPlusAuto | FuseCapabilities.autoInvalidateData)
    }

    // MARK: - Names and attributes

    public func lookup(_ request: FuseRequest, parent: UInt64, name: String) {
        guard let container = nodes[parent]?.identifier else { return request.fail(.noSuchFile) }
        do {
            guard let found = try cache.child(named: name, in: container, domain: domain) else {
                return request.replyNoEntry(timeout: Self.timeout)
            }
            request.reply(entry: entry(found, node: nodes.lookedUp(found.item, in: parent, as: name)))
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func forget(_ node: UInt64, lookups: UInt64) { nodes.forget(node, lookups: lookups) }

    public func attributes(_ request: FuseRequest, node: UInt64) {
        do {
            let status = try self.status(of: node)
            request.reply(attributes: attributes(status, node: node), timeout: attributeTimeout(status))
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func readLink(_ request: FuseRequest, node: UInt64) {
        do {
            guard let target = try status(of: node).item.symlinkTarget else { return request.fail(.invalidArgument) }
            request.reply(link: target)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func filesystemStatus(_ request: FuseRequest, node: UInt64) {
        do {
            var status = try FileSystem.filesystemStatus(cache.path)
            status.f_namemax = 255
            request.reply(filesystem: status)
        } catch {
            request.fail(error)
        }
    }

    /// The item a node stands for, read now, at the node's version: a node of a file whose content changed
    /// since keeps the size of its version. The root folder is not an item: it is made up.
    func status(of number: UInt64) throws -> ItemStatus {
        guard let node = nodes[number] else { throw CacheError(.noSuchItem, "node \(number) is forgotten") }
        guard var status = try cache.status(of: ItemIdentifier(domain: domain, node.identifier)) else {
            throw CacheError(.noSuchItem, "item \(node.identifier) of domain \(domain) is gone")
        }
        if status.item.kind == .file && status.item.itemVersion.contentVersion != node.contentVersion {
            status.item.itemVersion.contentVersion = node.contentVersion
            status.item.documentSize = node.size
        }
        return status
    }

    /// How long the kernel may trust an item's attributes: a day, except for a file whose `st_blocks` may
    /// change with no change to the catalogue, which gets a second (so `du` follows within one): one partly
    /// cached, which reads download into, and one of an origin domain not pinned, which eviction (by
    /// `evict` or by the bound, in any process) may drop. Changes to the catalogue (pins among them) are told
    /// to the kernel whatever the timeout.
    func attributeTimeout(_ status: ItemStatus) -> Double {
        guard status.item.kind == .file else { return Self.timeout }
        let mayChange =
            status.cachedBytes < status.item.documentSize || (evictable && !status.item.isPinned)
        return mayChange ? 1 : Self.timeout
    }

    /// The entry the kernel is given for an item.
    func entry(_ status: ItemStatus, node: UInt64) -> FuseEntry {
        FuseEntry(
            node: node, attributes: attributes(status, node: node), timeout: Self.timeout,
            attributeTimeout: attributeTimeout(status))
    }

    /// The attributes the kernel is given for an item: its size and dates, `st_blocks` counting what the
    /// store holds (so `du` shows what is local), owned by the user who mounted. The catalogue keeps no
    /// mode: files are 0444, folders 0555, links 0777.
    func attributes(_ status: ItemStatus, node: UInt64) -> FuseAttributes {
        let item = status.item
        let modified = item.contentModificationDate.timeIntervalSince1970
        var attributes = FuseAttributes(
            node: node, kind: .regular, permissions: 0o444, linkCount: 1, preferredBlockSize: 1 << 16, owner: owner,
            modified: modified, changed: modified, accessed: item.lastUsedDate?.timeIntervalSince1970 ?? modified)
        switch item.kind {
        case .folder:
            (attributes.kind, attributes.permissions, attributes.linkCount) = (.directory, 0o555, 2)
        case .symlink:
            (attributes.kind, attributes.permissions) = (.symbolicLink, 0o777)
            attributes.size = Int64(item.symlinkTarget?.utf8.count ?? 0)
        default:
            attributes.size = item.documentSize
            attributes.blocks = (status.cachedBytes + 511) / 512
        }
        return attributes
    }

    // MARK: - Files

    public func open(_ request: FuseRequest, node: UInt64, flags: Int32) {
        guard FileDescriptor.AccessMode(openFlags: flags) == .readOnly else { return request.fail(.readOnlyFilesystem) }
        do {
            let status = try self.status(of: node)
            guard status.item.kind == .file else { return request.fail(.isDirectory) }
            let file = OpenFile(
                item: ItemIdentifier(domain: domain, status.item.identifier), version: status.item.itemVersion,
                size: status.item.documentSize, opener: learns ? opener(of: request) : nil)
            let handle = files.add(file)
            if let opener = file.opener { cache.noteOpen(file.item, by: opener) }
            fill.start(file, cachedBytes: status.cachedBytes)
            // The pages the kernel cached stay valid: a changed file is invalidated when the change is seen.
            request.replyOpen(handle: handle, keepCache: true)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func read(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, size: Int) {
        guard let file = files[handle] else { return request.fail(.badFileDescriptor) }
        let count = Int(max(0, min(Int64(size), file.size - offset)))
        guard count > 0 else { return request.reply(bytes: UnsafeRawBufferPointer(start: nil, count: 0)) }
        if let opener = file.opener {
            cache.noteRead(file.item, range: ByteRange(location: offset, length: Int64(count)), by: opener)
        }
        // Whole chunks are read: they are decoded whole anyway, and the kernel keeps what was not asked.
        let span = KernelPageCache.span(
            offset: offset, count: count, size: file.size, chunkSize: Int64(chunkSize), limit: Self.maxRead)
        let buffer = buffers.take(Int(span.count))
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(span.count)])
        let asked = offset..<(offset + Int64(count))
        let miss: ReadMiss
        do {
            switch try cache.readCached(
                file.item, version: file.version, at: span.lowerBound, into: target, options: .strictVersioning)
            {
            case .served(let served):
                answer(request, node: node, file: file, asked: asked, span: span, read: served.bytesRead, in: buffer)
                return
            case .missing(let missing):
                miss = missing
            }
        } catch {
            buffers.give(buffer)
            return request.fail(error.mountErrno)
        }
        guard !timedOut.justFailed(handle, asked) else {
            buffers.give(buffer)
            return request.fail(.timedOut)
        }
        fill.missed(file, asked)
        // Not all in the store: the origin's bytes are awaited in a task, which answers; it fills the plan
        // the read above made, without planning again.
        Task { [self] in
            do {
                let served = try await cache.read(miss)
                answer(request, node: node, file: file, asked: asked, span: span, read: served.bytesRead, in: buffer)
            } catch {
                if error.mountErrno == .timedOut { timedOut.note(handle, asked) }
                request.fail(error.mountErrno)
                buffers.give(buffer)
            }
        }
    }

    /// Answers `asked` from `buffer`, which holds `read` bytes of the file from `span`'s start, then gives
    /// the kernel the rest of the span and the buffer back.
    private func answer(
        _ request: FuseRequest, node: UInt64, file: OpenFile, asked: Range<Int64>, span: Range<Int64>, read: Int,
        in buffer: UnsafeMutableRawBufferPointer
    ) {
        let from = Int(asked.lowerBound - span.lowerBound)
        let to = max(from, min(read, Int(asked.upperBound - span.lowerBound)))
        request.reply(bytes: UnsafeRawBufferPointer(rebasing: buffer[from..<to]))
        let given = pages.give(
            node: node, start: span.lowerBound, buffer: buffer, count: min(read, Int(span.count)), size: file.size,
            answered: asked, returningTo: buffers)
        if !given { buffers.give(buffer) }
    }

    /// Who opens a file, as traces tell runs apart: the requesting thread's process, so all of a program's
    /// threads are one opener.
    private func opener(of request: FuseRequest) -> TraceOpener {
        let thread = request.threadID
        return .process(ThreadGroup.process(ofThread: thread) ?? thread)
    }

    /// `SEEK_DATA` and `SEEK_HOLE` in the version the file was opened at: holes are its zero chunks.
    public func seek(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, whence: Int32) {
        guard let file = files[handle] else { return request.fail(.badFileDescriptor) }
        let target: SeekTarget
        switch whence {
        case FuseSeek.data: target = .data
        case FuseSeek.hole: target = .hole
        default: return request.fail(.invalidArgument)
        }
        do {
            guard let found = try cache.seek(target, in: file.item, version: file.version, from: offset) else {
                return request.fail(.noSuchDeviceOrAddress)
            }
            request.reply(offset: found)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    public func release(_ request: FuseRequest, node: UInt64, handle: UInt64) {
        files.remove(handle)
        timedOut.forget(handle)
        request.succeed()
    }

    // MARK: - Folders

    public func openDirectory(_ request: FuseRequest, node: UInt64) {
        do {
            let status = try self.status(of: node)
            guard status.item.kind == .folder else { return request.fail(.notDirectory) }
            // The kernel keeps the listing (`ls -lR` again reads no page of it); a change to the folder drops it
            // (ChangeFollower).
            request.replyOpen(
                handle: folders.add(OpenFolder(container: status.item.identifier)), keepCache: true,
                cacheDirectory: true)
        } catch {
            request.fail(error.mountErrno)
        }
    }

    /// Entries are numbered from 0: `.` and `..`, then the folder's items in name order; the offset the
    /// kernel gives is the number of the next entry to list.
    public func readDirectory(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, size: Int) {
        guard var folder = folders[handle] else { return request.fail(.badFileDescriptor) }
        var answer = FuseDirectoryBuffer(for: request, size: size)
        var entry = Int(offset)
        do {
            if entry < 2 {
                let own = FuseEntry(node: node, attributes: attributes(try status(of: node), node: node), timeout: 0)
                if entry == 0 {
                    guard answer.add(".", own, next: 1) else { return answer.send() }
                    entry = 1
                }
                let parent = nodes[node]?.parent ?? NodeTable.root
                let up = FuseEntry(node: parent, attributes: own.attributes, timeout: 0)
                guard answer.add("..", up, next: 2) else { return answer.send() }
                entry = 2
            }
            while let status = try item(entry - 2, of: &folder) {
                let name = status.item.filename
                // READDIRPLUS counts a lookup of each entry sent: one that does not fit is taken back.
                let child = nodes.lookedUp(status.item, in: node, as: name)
                guard answer.add(name, self.entry(status, node: child), next: Int64(entry + 1)) else {
                    nodes.forget(child, lookups: 1)
                    break
                }
                entry += 1
            }
            folders[handle] = folder
            answer.send()
        } catch {
            request.fail(error.mountErrno)
        }
    }

    /// The folder's `index`th item in name order, reading its page when it is not the one read last;
    /// `nil` past the end.
    private func item(_ index: Int, of folder: inout OpenFolder) throws -> ItemStatus? {
        let number = index / Self.pageSize
        if folder.lastPage?.number != number {
            // Pages are read in order the first time: the token of page `number` comes from page `number - 1`.
            while folder.pageStarts.count <= number {
                let previous = folder.pageStarts.count - 1
                let page = try cache.listing(
                    of: folder.container, in: domain, startingAt: folder.pageStarts[previous], pageSize: Self.pageSize)
                guard let next = page.nextPage else { return nil }
                folder.pageStarts.append(next)
            }
            let page = try cache.listing(
                of: folder.container, in: domain, startingAt: folder.pageStarts[number], pageSize: Self.pageSize)
            folder.lastPage = (number, page.items, page.nextPage)
            if let next = page.nextPage, folder.pageStarts.count == number + 1 { folder.pageStarts.append(next) }
        }
        let items = folder.lastPage!.items
        let within = index % Self.pageSize
        return within < items.count ? items[within] : nil
    }

    public func releaseDirectory(_ request: FuseRequest, node: UInt64, handle: UInt64) {
        folders.remove(handle)
        request.succeed()
    }
}
