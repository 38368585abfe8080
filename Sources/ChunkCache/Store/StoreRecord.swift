/// A value of one of the store's databases. Its encoding is always sealed and its decoding always checks the
/// seal first, so no record type can skip the check.
package protocol StoreRecord {
    /// What the user can do when a record of this type is damaged.
    static var remedy: String { get }
    /// Writes the record's fields; ``encoded()`` seals them.
    func write(to writer: inout ByteWriter)
    /// Reads the fields ``write(to:)`` wrote, from bytes whose seal has been checked.
    init(reading reader: inout ByteReader) throws(RecordDamage)
}

extension StoreRecord {
    /// The record as stored: its fields and their seal.
    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 96)
        write(to: &writer)
        return writer.sealed()
    }

    /// Checks and decodes a stored record.
    ///
    /// - Parameter name: The record, as ``RecordNames`` spells it; built only when the record is damaged.
    /// - Throws: `corruptData` naming the record and saying what to do when it fails its seal or its fields
    ///   are impossible.
    init(decoding value: UnsafeRawBufferPointer, name: @autoclosure () -> String) throws(CacheError) {
        do {
            var reader = try ByteReader(sealed: value)
            try self.init(reading: &reader)
        } catch {
            throw CacheError(.corruptData, "the store's record of \(name()) \(error.problem); \(Self.remedy)")
        }
    }

    /// Checks and decodes a stored record, or nil when it is damaged: for `verify`, which reports damage
    /// itself, and for naming records in errors.
    package init?(ifIntact value: UnsafeRawBufferPointer) {
        guard var reader = try? ByteReader(sealed: value), let record = try? Self(reading: &reader) else { return nil }
        self = record
    }
}
