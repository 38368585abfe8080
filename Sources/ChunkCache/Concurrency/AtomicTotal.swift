import Synchronization

/// A total that several threads add to at once; each addition learns the total it made, so exactly one adder
/// sees the total cross a given mark (a parallel fetch releases mapped pages every so many bytes written).
///
/// Any thread may add; nothing blocks. It orders nothing else (relaxed). A value, held inline by the type that
/// shares it.
struct AtomicTotal: ~Copyable, Sendable {
    private let total = Atomic<Int64>(0)

    init() {}

    /// Adds `amount` and returns the totals before and after this addition.
    func add(_ amount: Int64) -> (before: Int64, after: Int64) {
        let after = total.wrappingAdd(amount, ordering: .relaxed).newValue
        return (after - amount, after)
    }
}
