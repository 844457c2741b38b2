// SPDX-License-Identifier: Apache-2.0
// The escrow contract behind CUSTODY=chain (src/custody/): one hold per escrowRef, locked at
// funding, paid out once at closing. For local development chains only (chain id 31337 or 1337).
pragma solidity ^0.8.20;

/// @title SettlementEscrow
/// @notice Only the operator (the service's dev account that deployed it) locks and settles.
/// A hold is paid out at most once: a second settle of the same escrowRef reverts, which is what
/// makes a retried or duplicated payout transaction harmless.
contract SettlementEscrow {
    /// None: never locked. Locked: funds held. Paid: paid out (final).
    enum State { None, Locked, Paid }

    struct Hold {
        State state;
        address payer;
        address payee;
        uint256 amount;
        uint256 payerPaid;
        uint256 payeePaid;
        uint256 settledBlock;
    }

    address public immutable operator;
    mapping(bytes32 => Hold) private holds;

    event Locked(bytes32 indexed escrowRef, address payer, address payee, uint256 amount);
    event Paid(bytes32 indexed escrowRef, address payer, uint256 payerAmount, address payee, uint256 payeeAmount);

    error NotOperator(address caller);
    error ZeroAmount();
    error AlreadyLocked(bytes32 escrowRef);
    error NotLocked(bytes32 escrowRef);
    error AmountMismatch(bytes32 escrowRef, uint256 held, uint256 requested);
    error TransferFailed(address to, uint256 amount);

    constructor() {
        operator = msg.sender;
    }

    modifier onlyOperator() {
        if (msg.sender != operator) revert NotOperator(msg.sender);
        _;
    }

    /// @notice Locks msg.value for escrowRef, to be paid out later to payer and/or payee.
    function lock(bytes32 escrowRef, address payer, address payee) external payable onlyOperator {
        if (msg.value == 0) revert ZeroAmount();
        Hold storage h = holds[escrowRef];
        if (h.state != State.None) revert AlreadyLocked(escrowRef);
        h.state = State.Locked;
        h.payer = payer;
        h.payee = payee;
        h.amount = msg.value;
        emit Locked(escrowRef, payer, payee, msg.value);
    }

    /// @notice Pays out a locked hold exactly once: payerAmount to the payer, payeeAmount to the payee.
    function settle(bytes32 escrowRef, uint256 payerAmount, uint256 payeeAmount) external onlyOperator {
        Hold storage h = holds[escrowRef];
        if (h.state != State.Locked) revert NotLocked(escrowRef);
        if (payerAmount + payeeAmount != h.amount) revert AmountMismatch(escrowRef, h.amount, payerAmount + payeeAmount);
        // Effects before interactions: the hold is final before any value leaves.
        h.state = State.Paid;
        h.payerPaid = payerAmount;
        h.payeePaid = payeeAmount;
        h.settledBlock = block.number;
        emit Paid(escrowRef, h.payer, payerAmount, h.payee, payeeAmount);
        if (payerAmount > 0) _send(h.payer, payerAmount);
        if (payeeAmount > 0) _send(h.payee, payeeAmount);
    }

    /// @notice The hold of escrowRef; state 0 = none, 1 = locked, 2 = paid.
    function holdOf(bytes32 escrowRef) external view returns (
        uint8 state, address payer, address payee, uint256 amount, uint256 payerPaid, uint256 payeePaid, uint256 settledBlock
    ) {
        Hold storage h = holds[escrowRef];
        return (uint8(h.state), h.payer, h.payee, h.amount, h.payerPaid, h.payeePaid, h.settledBlock);
    }

    function _send(address to, uint256 amount) private {
        (bool ok, ) = to.call{value: amount}("");
        if (!ok) revert TransferFailed(to, amount);
    }
}
