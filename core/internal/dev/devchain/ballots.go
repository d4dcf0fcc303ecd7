package devchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// ballotsPerTx keeps a BatchVoter transaction under the 2^24 gas cap per
// transaction (EIP-7825): a signed ballot costs about 65k gas.
const ballotsPerTx = 200

// ballotGas is the gas one relayed ballot may use (it uses about 70k).
const ballotGas = 80_000

// CastVotesBySig has n distinct voters, first to first+n-1, cast signed
// ballots (castVoteBySig)
// on an OpenZeppelin proposal, relayed in batches by the BatchVoter
// contract, and seals them in blocks. Voter i's key derives from a public
// seed and holds no tokens, so every vote weighs 0: the point is the number
// of real VoteCast events, for benchmarks. support(i) chooses each vote.
// It returns the receipts of the relaying transactions.
func (c *Chain) CastVotesBySig(ctx context.Context, p *Proposal, first, n int, support func(i int) uint8) ([]*types.Receipt, error) {
	if !p.DAO.oz5() {
		// 4.9's Ballot has neither voter nor nonce, and BatchVoter calls 5.x.
		return nil, errors.New("cast votes by sig: only OpenZeppelin 5.x governors take these signed ballots")
	}
	domain := eip712Domain(p.DAO.govName, p.DAO.Governor)
	ballotType := crypto.Keccak256Hash([]byte("Ballot(uint256 proposalId,uint8 support,address voter,uint256 nonce)"))
	words, err := abi.NewType("bytes32", "", nil)
	if err != nil {
		return nil, err
	}
	uint256T, _ := abi.NewType("uint256", "", nil)
	uint8T, _ := abi.NewType("uint8", "", nil)
	addrT, _ := abi.NewType("address", "", nil)
	ballotArgs := abi.Arguments{{Type: words}, {Type: uint256T}, {Type: uint8T}, {Type: addrT}, {Type: uint256T}}

	var receipts []*types.Receipt
	var pending []*types.Transaction
	flush := func() error {
		c.commitLocked()
		for _, tx := range pending {
			r, err := c.receipt(ctx, tx)
			if err != nil {
				return fmt.Errorf("cast votes by sig: %w", err)
			}
			receipts = append(receipts, r)
		}
		pending = pending[:0]
		return nil
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	txsPerBlock := max(1, int(head.GasLimit/maxTxGas))
	c.mu.Lock()
	defer c.mu.Unlock()
	for start := first; start < first+n; start += ballotsPerTx {
		end := min(start+ballotsPerTx, first+n)
		var supports []uint8
		var voters []common.Address
		var sigs [][]byte
		for i := start; i < end; i++ {
			key := BallotKey(i)
			voter := crypto.PubkeyToAddress(key.PublicKey)
			s := support(i)
			enc, err := ballotArgs.Pack(ballotType, p.ID, s, voter, new(big.Int))
			if err != nil {
				return nil, err
			}
			sig, err := sign712(domain, crypto.Keccak256Hash(enc), key)
			if err != nil {
				return nil, err
			}
			supports, voters, sigs = append(supports, s), append(voters, voter), append(sigs, sig)
		}
		// A fixed gas limit: estimating a 14M-gas batch replays it a dozen times.
		gas := uint64(len(voters))*ballotGas + 100_000
		tx, err := c.sendGas(ctx, 0, gas, "BatchVoter", c.batch, "castVotesBySig", p.DAO.Governor, p.ID, supports, voters, sigs)
		if err != nil {
			return nil, fmt.Errorf("cast votes by sig: %w", err)
		}
		pending = append(pending, tx)
		if len(pending) == txsPerBlock {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if len(pending) > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return receipts, nil
}

// BallotKey returns the key of signed-ballot voter i (see CastVotesBySig).
func BallotKey(i int) *ecdsa.PrivateKey { return mustKey("govgate-dev-ballot-" + strconv.Itoa(i)) }

// eip712Domain is the domain separator of an OpenZeppelin Governor (EIP712
// version "1") on the devchain.
func eip712Domain(name string, verifying common.Address) common.Hash {
	typeHash := crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	buf := make([]byte, 0, 5*32)
	buf = append(buf, typeHash...)
	buf = append(buf, crypto.Keccak256([]byte(name))...)
	buf = append(buf, crypto.Keccak256([]byte("1"))...)
	buf = append(buf, common.LeftPadBytes(big.NewInt(ChainID).Bytes(), 32)...)
	buf = append(buf, common.LeftPadBytes(verifying.Bytes(), 32)...)
	return crypto.Keccak256Hash(buf)
}

func sign712(domain, structHash common.Hash, key *ecdsa.PrivateKey) ([]byte, error) {
	digest := crypto.Keccak256([]byte{0x19, 0x01}, domain.Bytes(), structHash.Bytes())
	sig, err := crypto.Sign(digest, key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27 // OpenZeppelin's ECDSA wants v in {27, 28}
	return sig, nil
}
