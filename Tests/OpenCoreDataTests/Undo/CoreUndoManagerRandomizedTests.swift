#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation
import Testing

@Suite("CoreUndoManager: randomized edits")
struct CoreUndoManagerRandomizedTests {
    /// Applies one random edit to the document.
    private func randomEdit(_ document: UndoArrayDocument, using rng: inout SeededGenerator) {
        let count = document.items.count
        switch count == 0 ? 0 : Int.random(in: 0..<3, using: &rng) {
        case 0: document.insert(Int.random(in: 0..<1000, using: &rng), at: Int.random(in: 0...count, using: &rng))
        case 1: document.remove(at: Int.random(in: 0..<count, using: &rng))
        default: document.replace(at: Int.random(in: 0..<count, using: &rng), with: Int.random(in: 0..<1000, using: &rng))
        }
    }

    @Test(arguments: [1, 2, 3, 42, 2024, 0xC0FFEE] as [UInt64])
    func undoingEverythingRestoresTheOriginalAndRedoingRestoresTheFinalState(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let manager = CoreUndoManager()
        let original = (0..<Int.random(in: 0..<8, using: &rng)).map { _ in Int.random(in: 0..<1000, using: &rng) }
        let document = UndoArrayDocument(manager, items: original)

        // Snapshots at each top-level group boundary.
        var snapshots: [[Int]] = [original]
        let groupCount = Int.random(in: 10..<40, using: &rng)
        for _ in 0..<groupCount {
            if Bool.random(using: &rng) {
                // An event: several edits in the automatic group.
                for _ in 0..<Int.random(in: 1...4, using: &rng) { randomEdit(document, using: &rng) }
                manager.endEventGroup()
            } else {
                // Explicit groups, sometimes nested.
                manager.beginUndoGrouping()
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    if Bool.random(using: &rng) {
                        manager.beginUndoGrouping()
                        for _ in 0..<Int.random(in: 1...3, using: &rng) { randomEdit(document, using: &rng) }
                        manager.endUndoGrouping()
                    } else {
                        randomEdit(document, using: &rng)
                    }
                }
                manager.endUndoGrouping()
            }
            snapshots.append(document.items)
        }
        let final = document.items
        #expect(manager.groupingLevel == 0)

        // Undo everything, checking each intermediate state.
        for expected in snapshots.dropLast().reversed() {
            #expect(manager.canUndo)
            manager.undo()
            #expect(document.items == expected)
        }
        #expect(!manager.canUndo)
        #expect(document.items == original)

        // Redo everything.
        for expected in snapshots.dropFirst() {
            #expect(manager.canRedo)
            manager.redo()
            #expect(document.items == expected)
        }
        #expect(!manager.canRedo)
        #expect(document.items == final)

        // A random walk of undo/redo stays consistent with the snapshots.
        var position = snapshots.count - 1
        for _ in 0..<50 {
            if Bool.random(using: &rng) {
                manager.undo()
                position = max(position - 1, 0)
            } else {
                manager.redo()
                position = min(position + 1, snapshots.count - 1)
            }
            #expect(document.items == snapshots[position])
        }
    }

    @Test(arguments: [7, 99] as [UInt64])
    func newEditsAfterUndoDiscardTheRedoBranch(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let manager = CoreUndoManager()
        let document = UndoArrayDocument(manager, items: [1, 2, 3])
        for _ in 0..<10 {
            randomEdit(document, using: &rng)
            manager.endEventGroup()
        }
        for _ in 0..<4 { manager.undo() }
        let branchPoint = document.items
        randomEdit(document, using: &rng)
        manager.endEventGroup()
        #expect(!manager.canRedo)
        manager.undo()
        #expect(document.items == branchPoint)
        for _ in 0..<6 { manager.undo() }
        #expect(document.items == [1, 2, 3])
        #expect(!manager.canUndo)
    }
}
