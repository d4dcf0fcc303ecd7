package devchain

import (
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Every dev token (OpenZeppelin 4.9 and 5.x ERC20Votes, Uniswap's Uni)
// declares delegate(address), transfer(address,uint256), delegates(address)
// with the same selectors, so one artifact's ABI speaks to all of them; the
// vote getters differ (getVotes, getCurrentVotes) and TokenVotes picks.

// Delegate makes account from delegate its votes on d's token to `to`.
func (c *Chain) Delegate(ctx context.Context, d *Deployment, from int, to common.Address) (*types.Receipt, error) {
	return c.transact(ctx, from, "GovToken", d.Token, "delegate", to)
}

// Transfer sends amount of d's token from account from to `to`; the
// delegates of both sides gain or lose that voting power.
func (c *Chain) Transfer(ctx context.Context, d *Deployment, from int, to common.Address, amount *big.Int) (*types.Receipt, error) {
	return c.transact(ctx, from, "GovToken", d.Token, "transfer", to, amount)
}

// Balance returns account's balance of d's token.
func (c *Chain) Balance(ctx context.Context, d *Deployment, account common.Address) (*big.Int, error) {
	out, err := c.call(ctx, "GovToken", d.Token, "balanceOf", account)
	if err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}
