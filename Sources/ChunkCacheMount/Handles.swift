import ChunkCache
import Synchronization

/// Numbered handles for open files or folders.
final class Handles<Value: Sendable>: Sendable {
    private struct State {
        var open: [UInt64: Value] = [:]
        var next: UInt64 = 1
    }

    private let state = Mutex(State())

    func add(_ value: Value) -> UInt64 {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.open[handle] = value
            return handle
        }
    }

    subscript(handle: UInt64) -> Value? {
        get { state.withLock { $0.open[handle] } }
        set { state.withLock { $0.open[handle] = newValue } }
    }

    func remove(_ handle: UInt64) { state.withLock { $0.open[handle] = nil } }

}
