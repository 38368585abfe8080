/// Why a record's bytes cannot be trusted. Decoding throws it; the caller, which knows the record's name,
/// turns it into `corruptData` (see ``StoreRecord``).
package struct RecordDamage: Error {
    /// What is wrong, completing "the store's record of X …".
    let problem: String

    static let failsSeal = RecordDamage(problem: "fails its check")
    static let truncated = RecordDamage(problem: "is truncated")
}
