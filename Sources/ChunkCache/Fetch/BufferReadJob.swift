/// One read into a caller's buffer (``ChunkCache/read(_:version:at:into:options:request:)-yqvn``): plans it and
/// reads the planned bytes in one snapshot, on whichever thread runs it.
struct BufferReadJob: @unchecked Sendable {
    let item: ItemIdentifier
    let offset: Int64
    /// The caller's buffer: filled by one thread at a time, while the caller waits (`@unchecked Sendable`).
    let buffer: UnsafeMutableRawBufferPointer
    let options: FetchOptions
    let request: FetchRequest

    /// A read of `buffer.count` bytes from `offset`, checked.
    /// - Throws: `invalidArgument` for a negative offset; the item's and domain's name checks.
    @inline(never)  // Swift 6.3.1's release build crashes splitting the async read's coroutine with it inlined.
    init(
        item: ItemIdentifier, offset: Int64, buffer: UnsafeMutableRawBufferPointer, options: FetchOptions,
        request: FetchRequest
    ) throws {
        guard offset >= 0 else {
            throw CacheError(.invalidArgument, "offset \(offset) in item \(item) is negative; read from 0 or later")
        }
        try Records.validate(domain: item.domain, item: item.rawValue)
        (self.item, self.offset, self.buffer, self.options, self.request) = (item, offset, buffer, options, request)
    }

    var minimalRange: ByteRange { ByteRange(location: offset, length: Int64(buffer.count)) }

    /// Serves the read from bytes downloaded for it (`bytes` are `downloaded.range` of the version, which
    /// covers the read's range up to the end of the file).
    func copy(_ bytes: [UInt8], _ downloaded: ChunkCache.DownloadedRange, engine: Engine) throws -> ServedRead {
        let end = min(offset + Int64(buffer.count), downloaded.version.size)
        let count = Int(max(0, end - offset))
        if count > 0 {
            let start = Int(offset - downloaded.range.location)
            precondition(start >= 0 && start + count <= bytes.count, "a download covers the range it was made for")
            bytes.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]))
            }
        }
        // Its use recorded as a read served from the store records it.
        downloaded.noteUse(in: engine)
        return ServedRead(
            offset: offset, fromOriginDomain: true,
            result: ReadResult(
                bytesRead: count, item: downloaded.publicItem, domainVersion: downloaded.domainVersion))
    }

    /// Plans the read of `version` and reads it, in one snapshot.
    func attempt(_ version: [UInt8]?, engine: Engine) throws -> FetchOutcome<ServedRead> {
        try read(.planning(version), engine: engine)
    }

    /// Reads `cold`, the plan a miss carried through its fill, without planning again (as
    /// ``FetchJob/serve(_:engine:cancellation:)``).
    func serve(_ cold: ColdPlan, engine: Engine) throws -> FetchOutcome<ServedRead> {
        try read(.serving(cold), engine: engine)
    }

    private func read(_ source: PlanSource, engine: Engine) throws -> FetchOutcome<ServedRead> {
        let store = engine.store
        return try source.inSnapshot(
            engine: engine, item: item, minimal: minimalRange, alignment: 1, options: options, request: request
        ) { plan, txn -> FetchOutcome<ServedRead>? in
            switch try BufferReader.read(plan, at: offset, into: buffer, store: store, in: txn) {
            case .damaged(let chunk):
                return .missing(.damaged(plan.cold, chunk))
            case .read(let count):
                engine.usage.noteUse(
                    of: item, recorded: plan.item.lastUsedDate, reads: plan.policyReads, served: plan.servedChunks,
                    engine: engine)
                return .served(
                    ServedRead(
                        offset: offset, fromOriginDomain: plan.fromOrigin,
                        result: ReadResult(
                            bytesRead: count,
                            item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
                            domainVersion: plan.domainVersion)))
            }
        }!  // the body always answers
    }
}
