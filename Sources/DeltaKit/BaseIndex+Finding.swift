// MARK: - Finding a new chunk's base

extension BaseIndex {
    /// Where in the earlier version the base of a new chunk should start, or nil when none of its blocks is there.
    ///
    /// A new version keeps most of its bytes where the earlier one had them (a database edited in place), or
    /// shifted by what was inserted or removed before them (a tar whose members grew), the same shift for long
    /// runs. So the same offset is tried first, then `likelyShift` (the shift of the previous chunk's base): when
    /// the earlier blocks inside the chunk's range at that shift hold at least half of its bytes, the base starts
    /// there, at the cost of one strong hash per block. Otherwise the weak checksum is rolled across the chunk one byte at a time, rsync-style: each window
    /// whose checksum an earlier block has is confirmed with the strong hash, a confirmed block moves the window on
    /// by a whole block, and the shift (earlier offset − new offset) that most matched bytes agree on wins, ties
    /// going to the smaller shift. The base then covers the chunk's bytes at that shift, and those at other matched
    /// shifts while all fit in `maxLength` (an insertion inside the chunk), from the first of them on.
    ///
    /// Cost: O(chunk) for the roll, plus a strong hash of one block per weak hit; hits that the strong hash
    /// refutes are capped at one per block of the chunk plus 16, after which the roll stops (data whose weak
    /// checksums collide a lot, such as long runs of one byte, then costs O(chunk) still).
    ///
    /// - Parameters:
    ///   - chunk: The new chunk's bytes; shorter than a block, it never matches.
    ///   - offset: The chunk's offset in the new version.
    ///   - maxLength: The longest base wanted: two chunks in the store's design.
    ///   - likelyShift: Where the chunk's bytes most likely moved: the previous chunk's ``BaseMatch/shift``.
    /// - Returns: The base, inside the `length` bytes appended, or nil when no whole block of the chunk was found
    ///   (fresh bytes, a chunk shorter than a block, an earlier version shorter than a block).
    public func findBase(
        for chunk: UnsafeRawBufferPointer, at offset: Int64, maxLength: Int, likelyShift: Int64 = 0
    ) -> BaseMatch? {
        guard blockCount > 0, chunk.count >= blockSize, offset >= 0, maxLength > 0 else { return nil }
        if let matched = alignedMatches(chunk, at: offset), matched * 2 >= chunk.count {
            return place(chunk, at: offset, votes: [0: matched], maxLength: maxLength)
        }
        let (hinted, overflow) = offset.addingReportingOverflow(likelyShift)
        if likelyShift != 0, !overflow, let matched = alignedMatches(chunk, at: hinted), matched * 2 >= chunk.count {
            return place(chunk, at: offset, votes: [likelyShift: matched], maxLength: maxLength)
        }
        let votes = rollingMatches(chunk, at: offset)
        guard !votes.isEmpty else { return nil }
        return place(chunk, at: offset, votes: votes, maxLength: maxLength)
    }

    /// The bytes of the earlier blocks wholly inside `[earlierOffset, earlierOffset + chunk.count)` that the chunk
    /// holds at the same place relative to `earlierOffset`, or nil when none.
    private func alignedMatches(_ chunk: UnsafeRawBufferPointer, at earlierOffset: Int64) -> Int? {
        let offset = earlierOffset
        guard offset < length, offset > -Int64(chunk.count) else { return nil }
        let size = Int64(blockSize)
        var block = offset <= 0 ? 0 : (offset + size - 1) / size
        var matched = 0
        while block < Int64(blockCount), (block + 1) * size <= offset + Int64(chunk.count) {
            let start = Int(block * size - offset)
            let window = UnsafeRawBufferPointer(rebasing: chunk[start..<(start + blockSize)])
            if Self.strongHash(window) == strong[Int(block)] { matched += blockSize }
            block += 1
        }
        return matched > 0 ? matched : nil
    }

    /// Rolls the weak checksum across `chunk` and returns, per shift, the bytes of the blocks found at it.
    private func rollingMatches(_ chunk: UnsafeRawBufferPointer, at offset: Int64) -> [Int64: Int] {
        var votes: [Int64: Int] = [:]
        var position = 0
        var checksum = RollingChecksum(UnsafeRawBufferPointer(rebasing: chunk[..<blockSize]))
        var lastShift: Int64 = 0
        var refuted = 0
        let refutedLimit = chunk.count / blockSize + 16
        while position + blockSize <= chunk.count {
            let window = UnsafeRawBufferPointer(rebasing: chunk[position..<(position + blockSize)])
            let value = checksum.value
            if hasWeakHit(value) {
                let found = confirmedShift(
                    of: window, checksum: value, at: offset + Int64(position), preferring: lastShift,
                    refuted: &refuted)
                if let found {
                    votes[found, default: 0] += blockSize
                    lastShift = found
                    position += blockSize
                    if position + blockSize <= chunk.count {
                        checksum = RollingChecksum(
                            UnsafeRawBufferPointer(rebasing: chunk[position..<(position + blockSize)]))
                    }
                    continue
                }
                if refuted > refutedLimit { break }
            }
            if position + blockSize < chunk.count {
                checksum.roll(leaving: chunk[position], entering: chunk[position + blockSize])
            }
            position += 1
        }
        return votes
    }

    /// Whether an earlier block (among the first 64 of its slot) has the weak checksum `value`: checked inline
    /// before anything costlier, as most positions of a roll have none.
    @inline(__always)
    private func hasWeakHit(_ value: UInt32) -> Bool {
        var candidate = firstCandidate(for: value)
        var steps = 0
        while let block = candidate, steps < 64 {
            if weak[block] == value { return true }
            candidate = nextCandidate(after: block)
            steps += 1
        }
        return false
    }

    /// The shift of an earlier block holding `window` (at `newOffset` in the new version): `preferred`'s block when
    /// it is one (the block after the last one matched), else the candidate nearest to `preferred` among the first
    /// 64 of the checksum's chain. Counts weak hits the strong hash refutes in `refuted`.
    private func confirmedShift(
        of window: UnsafeRawBufferPointer, checksum: UInt32, at newOffset: Int64, preferring preferred: Int64,
        refuted: inout Int
    ) -> Int64? {
        var windowHash: UInt64?
        func holds(_ block: Int) -> Bool {
            guard weak[block] == checksum else { return false }
            let hash = windowHash ?? Self.strongHash(window)
            windowHash = hash
            if strong[block] == hash { return true }
            refuted += 1
            return false
        }
        let size = Int64(blockSize)
        let expected = newOffset + preferred
        if expected >= 0, expected % size == 0, expected / size < Int64(blockCount), holds(Int(expected / size)) {
            return preferred
        }
        var best: Int64?
        var candidate = firstCandidate(for: checksum)
        var steps = 0
        while let block = candidate, steps < 64 {
            if holds(block) {
                let shift = Int64(block) * size - newOffset
                if best.map({ abs(shift - preferred) < abs($0 - preferred) }) ?? true { best = shift }
            }
            candidate = nextCandidate(after: block)
            steps += 1
        }
        return best
    }

    /// The base for the matched shifts: from the best one's bytes on, widened to the next best ones' while all fit
    /// in `maxLength`, then moved back to fit inside the earlier version.
    private func place(
        _ chunk: UnsafeRawBufferPointer, at offset: Int64, votes: [Int64: Int], maxLength: Int
    ) -> BaseMatch {
        let ranked = votes.sorted { ($0.value, -abs($0.key)) > ($1.value, -abs($1.key)) }
        let best = ranked[0]
        let length = Int(min(Int64(maxLength), self.length))
        var low = offset + best.key
        var high = low + Int64(chunk.count)
        for (shift, _) in ranked.dropFirst() {
            let (start, end) = (min(low, offset + shift), max(high, offset + shift + Int64(chunk.count)))
            if end - start <= Int64(length) { (low, high) = (start, end) }
        }
        let start = min(max(low, 0), self.length - Int64(length))
        return BaseMatch(offset: start, length: length, shift: best.key, matchedBytes: best.value)
    }
}
