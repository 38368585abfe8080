import CLMDB

/// A read-only snapshot. Only lives inside ``Environment/read(_:)``.
public struct ReadTransaction: ~Copyable, TransactionReading {
    public let handle: OpaquePointer
}
